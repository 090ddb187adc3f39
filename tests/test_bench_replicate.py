"""bench.replicate: a corpus N times the demo's whose copies share no embedded text, so a build
of it embeds every copy (the store reuses the vector of a text it has embedded before)."""
from __future__ import annotations

from pathlib import Path

from bench.replicate import mark, replicate
from dgrag.config import Settings
from dgrag.store import Store

PAGE = """# Router

Intro text.

## pushUrl

```ts
router.pushUrl({ url: 'pages/Second' })
```

| name | type |
|---|---|
| url | string |
"""


def test_every_heading_code_block_and_table_header_carries_the_copy():
    got = mark(PAGE, 3)
    assert "# Router (copy 3)" in got and "## pushUrl (copy 3)" in got
    assert "```ts\ncopy 3\nrouter.pushUrl" in got  # inside the fence, after its opening line
    assert "| copy 3  name | type |" in got and "| url | string |" in got  # the header only
    assert "Intro text." in got and got.count("```") == 2


def test_two_copies_embed_twice_what_one_does(tmp_path: Path, hash_embedder):
    from dgrag.ingest.pipeline import index_folder

    src = tmp_path / "src"
    (src / "api").mkdir(parents=True)
    (src / "router.md").write_text(PAGE, encoding="utf-8")
    (src / "api" / "tabs.md").write_text(PAGE.replace("Router", "Tabs").replace("pushUrl", "onChange")
                                         + "\nSee the [router](../router.md).\n", encoding="utf-8")
    assert replicate(src, tmp_path / "two", 2) == 4
    embedded = []
    for folder in (src, tmp_path / "two"):
        s = Settings(db_path=tmp_path / f"{folder.name}.db", docs_root=folder, embedder="hash")
        with Store(s.db_path) as st:
            embedded.append(index_folder(s, st, hash_embedder).embedded)
    assert embedded[1] == 2 * embedded[0] > 0
