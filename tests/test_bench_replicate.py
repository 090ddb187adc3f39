"""bench.replicate: a corpus N times the demo's whose copies share no embedded text, so a build
of it embeds every copy (the store reuses the vector of a text it has embedded before)."""
from __future__ import annotations

from pathlib import Path

from bench.replicate import mark, permutations, replicate, vary
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


PROSE = """# Router

The router navigates between pages. Call `router.pushUrl` with the target URL, see
[the guide](guide/router-usage.md). 路由模块提供页面跳转的能力。

```ts
router.pushUrl({ url: 'pages/Second' })
```
"""


def test_varied_prose_swaps_words_within_their_group_and_keeps_code_links_and_grammar():
    pages = [PROSE, PROSE.replace("router", "tabs").replace("pages", "tabs"), "Navigates pushes URL 页面"]
    first, second = permutations(pages, 2)
    assert first == {}  # copy 1 is the corpus itself
    assert sorted(second) == sorted(second.values())  # a permutation of the words it moves
    assert all(len(a) == len(b) for a, b in second.items() if a[0] < "\u4e00")  # a word of its length
    assert "the" not in second and "with" not in second  # the OpenIE's own words stay
    text = vary(PROSE, {"router": "widget", "navigates": "decorates", "url": "key", "页": "码"})
    assert text.startswith("# Widget\n\nThe widget decorates between pages.")
    assert "`widget.pushKey`" in text and "target KEY" in text  # inline code and CamelCase parts too
    assert "(guide/router-usage.md)" in text  # a link target is left alone
    assert "router.pushUrl({ url: 'pages/Second' })" in text  # and a code block
    assert "码面跳转" in text and vary(PROSE, {}) == PROSE


def test_varied_copies_give_the_offline_openie_other_entities(tmp_path: Path):
    from dgrag.enrich.heuristic_openie import extract

    src = tmp_path / "src"
    src.mkdir()
    words = ("Alpha Beta Gamma Delta Epsilon Zeta Theta Kappa Lambda Sigma Omega Orion Vega Rigel Deneb"
             " Altair Spica Antares Pollux Castor Mira Lyra Draco Hydra Pavo").split()
    (src / "a.md").write_text("".join(f"The {w}Widget renders the {w}Panel of the {w}Layout.\n\n" for w in words),
                              encoding="utf-8")
    replicate(src, tmp_path / "out", 2, vary_prose=True, common=0)
    names = []
    for k in (1, 2):
        text = (tmp_path / "out" / f"copy-{k}" / "a.md").read_text(encoding="utf-8")
        names.append({name for para in text.split("\n\n") for name, _ in extract(para, "", "en")[0]})
    assert names[0] and names[1] and len(names[0] & names[1]) < len(names[0]) / 2
