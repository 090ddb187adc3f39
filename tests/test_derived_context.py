"""The text around code and tables is derived from the page's chunks, not stored: the derived
context equals what the parser sees on the fixture, a file from before schema 7 loses the stored
copy on upgrade, and the summary step reads the same input either way."""
from __future__ import annotations

import json

from dgrag.enrich.runner import pending_items
from dgrag.enrich.steps import STEPS, summary_input
from dgrag.ingest import context
from dgrag.ingest.markdown import parse_page
from dgrag.store import Store
from dgrag.store.connect import applied_version

from old_files import open_at_version


def _parsed_contexts(settings) -> dict[tuple[str, int, int], str]:
    """(page, line_start, line_end) -> context, as the parser computes it from the page itself."""
    out = {}
    for page in sorted(settings.docs_root.rglob("*.md")):
        rel = page.relative_to(settings.docs_root).as_posix()
        for n in parse_page(rel, page.read_text(encoding="utf-8"), context_lines=settings.context_lines).nodes:
            if n["type"] in context.DERIVED:
                out[(rel, n["line_start"], n["line_end"])] = n["context"]
    return out


def test_the_derived_context_equals_the_parsed_one(fixture_index):
    settings, _ = fixture_index
    parsed = _parsed_contexts(settings)
    with Store(settings.db_path, readonly=True) as st:
        nodes = st.nodes.by_rowids(st.nodes.of_type(list(context.DERIVED)))
        assert nodes and all("context" not in n["meta"] for n in nodes)  # not stored
        context.attach(st, nodes, settings.context_lines)
    assert {"code", "table"} <= {n["type"] for n in nodes}
    got = {(n["source_path"], n["line_start"], n["line_end"]): n["context"] for n in nodes}
    assert got == parsed
    assert all("…" in c for c in got.values())


def test_page_lines_put_each_chunk_at_its_lines():
    lines = context.page_lines([(4, 6, "## B\ntext b"), (1, 3, "# A\n\nintro")])
    assert lines == ["# A", "", "intro", "## B", "text b", ""]
    assert context.around(lines, 3, 4, 2) == "intro\n…\ntext b"


def _file_at_version_6(path) -> None:
    """An index as dgrag wrote it with 0001-0006: the context of code, tables and images in meta."""
    con = open_at_version(path, 6)
    page = "# T\n\nBefore the code.\n\n```js\nlet a = 1\n```\n\nAfter it."
    rows = [(1, "chunk-1", "chunk", page, 1, 9, {"level": 1}),
            (2, "code-1", "code", "let a = 1", 5, 7, {"code_language": "js", "context": "stored\n…\nhere"}),
            (3, "image-1", "image", "a figure", 3, 3, {"sha": "ab", "context": "kept\n…"})]
    con.executemany("INSERT INTO nodes(rowid, id, type, text, source_path, line_start, line_end, meta) "
                    "VALUES (?, ?, ?, ?, 'p.md', ?, ?, ?)", [(*r[:6], json.dumps(r[6])) for r in rows])
    con.execute("COMMIT")
    con.close()


def test_a_version_6_file_drops_the_stored_context_and_derives_it(tmp_path):
    old = tmp_path / "v6.db"
    _file_at_version_6(old)
    with Store(old) as st:
        assert applied_version(st.con) >= 7
        chunk, code, image = st.nodes.by_rowids([1, 2, 3])
        assert code["meta"] == {"code_language": "js"}  # the rest of meta kept
        assert image["meta"] == {"sha": "ab", "context": "kept\n…"}  # an image keeps its own
        items = pending_items(st, STEPS["summaries"], retry_failed=False, use_llm=False, limit=None,
                              context_lines=15)
    code = next(i.node for i in items if i.node["type"] == "code")
    assert code["context"] == "# T\n\nBefore the code.\n\n…\n\nAfter it."
    assert summary_input(code) == f"{code['context']}\n\nlet a = 1"


def test_a_stored_context_is_read_as_it_is():
    node = {"type": "code", "text": "x", "meta": {"context": "old\n…"}}
    context.attach(None, [node], 15)  # nothing to derive: no store needed
    assert context.of(node) == "old\n…" and "context" not in node
