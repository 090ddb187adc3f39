"""Structural ingest of the fixture excerpt: nodes, edges, images, vectors, incremental runs."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from dgrag.ingest.pipeline import index_folder
from dgrag.store import Store

TYPES = ("file", "chunk", "code", "table", "image")


def test_excerpt_builds_every_node_type_with_a_vector(fixture_index):
    settings, report = fixture_index
    with Store(settings.db_path, readonly=True) as st:
        stats = st.stats()
        assert st.integrity_check() == "ok"
    assert stats["nodes"]["file"] == 11
    for t in TYPES:
        assert stats["nodes"][t] > 0, t
        assert stats["vectors"][t] == stats["nodes"][t], t
    assert stats["edges"]["contains"] > stats["nodes"]["chunk"]
    assert stats["edges"]["jump"] > 0
    assert 0 < report.embedded <= sum(stats["nodes"][t] for t in TYPES)


def test_breadcrumbs_lines_urls_and_language(fixture_index):
    settings, _ = fixture_index
    store = Store(settings.db_path, readonly=True)
    rows = store.con.execute(
        "SELECT id, breadcrumb, line_start, line_end, source_url, language, source_path FROM nodes "
        "WHERE type='code' AND source_path='zh-cn/application-dev/quick-start/start-with-ace-tools.md' "
        "ORDER BY line_start").fetchall()
    nid, crumb, start, end, url, lang, path = rows[0]
    assert nid.startswith("code-")
    assert crumb == "ACE Tools快速指南 / 使用说明 / 环境准备"
    assert lang == "zh"
    assert url == f"https://github.com/arkui-x/docs/blob/master/{path}#L{start}"
    lines = (settings.docs_root / path).read_text(encoding="utf-8").splitlines()
    assert lines[start - 1].lstrip().startswith("```")  # the range starts at the opening fence
    en = store.con.execute("SELECT DISTINCT language FROM nodes WHERE source_path LIKE 'en/%'").fetchall()
    assert en == [("en",)]


def test_code_table_image_nodes_hang_under_their_chunk(fixture_index):
    store = Store(fixture_index[0].db_path, readonly=True)
    q = ("SELECT p.type, c.type, count(*) FROM edges e JOIN nodes p ON p.rowid=e.src "
         "JOIN nodes c ON c.rowid=e.dst WHERE e.type='contains' GROUP BY 1, 2")
    pairs = {(a, b) for a, b, _ in store.con.execute(q)}
    assert pairs == {("file", "chunk"), ("chunk", "chunk"), ("chunk", "code"), ("chunk", "table"),
                     ("chunk", "image")}
    code = store.con.execute("SELECT meta, summary FROM nodes WHERE type='code' LIMIT 1").fetchone()
    meta = json.loads(code[0])
    assert "context" not in meta and code[1]  # the text around it is derived (test_derived_context.py)
    # the chunk's prose has no code and no image markup (and is not kept twice in meta)
    rows = store.con.execute("SELECT prose, meta FROM nodes WHERE type='chunk'").fetchall()
    assert rows and all(p is not None and "filter" not in json.loads(m) for p, m in rows)
    assert any(p.strip() for p, _ in rows) and not any("```" in p or "![" in p for p, _ in rows)


def test_images_resolved_merged_and_problems_reported(fixture_index):
    settings, report = fixture_index
    store = Store(settings.db_path, readonly=True)
    problems = "\n".join(report.problems)
    assert "missing image: en/application-dev/quick-start/figures/does-not-exist.png" in problems
    # an image on another host is counted, never fetched, and no problem of the docs (a docs site
    # may show hundreds: GitBook's emoji and Google-hosted screenshots)
    assert "https://example.com/logo.png" not in problems and report.dialect["recognised"]["remote image"] == 1
    assert "broken link: no-such-page.md" in problems
    # en/zh copies of the same figure, and the scaled-down copy, merge into one node each
    assert report.images_merged >= 5
    figures = settings.docs_root / "en/application-dev/quick-start/figures"
    shas = [hashlib.sha256((figures / f).read_bytes()).hexdigest() for f in ("newPage.png", "newPage-small.png")]
    reps = {store.images.representative(s) for s in shas}
    assert reps == {shas[0]}  # the scaled-down copy now points at the full-size one
    row = store.con.execute("SELECT rowid, meta FROM nodes WHERE type='image' AND content_hash=?",
                            (shas[0],)).fetchall()
    assert len(row) == 1
    meta = json.loads(row[0][1])
    assert (meta["width"], meta["height"]) == (661, 546)  # the highest resolution is kept
    parents = store.con.execute(
        "SELECT count(DISTINCT src) FROM edges WHERE dst=? AND type='contains'", (row[0][0],)).fetchone()[0]
    assert parents >= 3  # en page, zh page, gallery (twice: small copy + Windows path)
    data, fmt = store.images.data(meta["sha"])
    assert data[:4] == b"\x89PNG" and fmt == "png"


def test_second_run_embeds_nothing_and_edit_reembeds_only_that_page(indexed, fixture_index, embedder):
    settings, first = indexed, fixture_index[1]
    store = Store(settings.db_path)
    before = store.stats()
    again = index_folder(settings, store, embedder)
    assert again.embedded == 0 and again.files_indexed == 0 and again.files_unchanged == 11
    after = store.stats()
    assert {k: after[k] for k in ("nodes", "edges", "vectors")} == {k: before[k] for k in ("nodes", "edges", "vectors")}

    page = settings.docs_root / "en/application-dev/quick-start/start-overview.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("## Development Tools", "## Development Tools\n\nA new sentence about ACE Tools."),
                    encoding="utf-8")
    edited = index_folder(settings, store, embedder)
    assert edited.files_indexed == 1
    assert 0 < edited.embedded <= 3  # the changed section and the page's file node
    assert edited.embedded < first.embedded / 20


def test_the_files_table_keeps_a_pages_digest_with_its_readers_version():
    from dgrag.ingest.pipeline import READER, logged_digest, read_by_older_reader, read_logged

    assert read_logged(logged_digest("ab12")) == ("ab12", READER) and not read_by_older_reader(logged_digest("ab12"))
    assert read_logged("ab12") == ("ab12", 1) and read_by_older_reader("ab12")  # written before versions were kept
    assert not read_by_older_reader(None)  # an unreadable file: never read, no digest


def test_a_newer_reader_reads_every_page_again_and_embeds_only_what_changed(indexed, embedder, monkeypatch):
    """After an upgrade whose reader reads pages differently (`pipeline.READER` raised), the next
    run parses every page again; nodes that read the same keep their vectors."""
    from dgrag.ingest import pipeline

    settings, store = indexed, Store(indexed.db_path)
    before = store.stats()
    monkeypatch.setattr(pipeline, "READER", pipeline.READER + 1)
    again = index_folder(settings, store, embedder)
    assert again.files_indexed == 11 and again.files_unchanged == 0 and again.embedded == 0
    assert {k: store.stats()[k] for k in ("nodes", "edges", "vectors")} == \
        {k: before[k] for k in ("nodes", "edges", "vectors")}
    assert index_folder(settings, store, embedder).files_unchanged == 11  # and then it is current


def test_deleted_page_loses_its_nodes_edges_and_vectors(indexed, embedder):
    settings = indexed
    store = Store(settings.db_path)
    path = "en/application-dev/reference/arkui-ts/ts-universal-events-touch.md"
    rowids = [r for (r,) in store.con.execute("SELECT rowid FROM nodes WHERE source_path=?", (path,))]
    assert rowids
    (settings.docs_root / path).unlink()
    report = index_folder(settings, store, embedder)
    assert report.files_deleted == 1
    marks = ",".join("?" * len(rowids))
    assert store.con.execute(f"SELECT count(*) FROM nodes WHERE rowid IN ({marks})", rowids).fetchone()[0] == 0
    assert store.con.execute(
        f"SELECT count(*) FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", rowids + rowids).fetchone()[0] == 0
    stats = store.stats()
    for t in TYPES:
        assert stats["vectors"][t] == stats["nodes"][t]
    assert store.integrity_check() == "ok"


def test_interrupted_embedding_resumes(settings, store, hash_embedder):
    embedder = hash_embedder  # what is checked is what gets committed, not what the vectors mean

    class Flaky:
        model_id, dim = embedder.model_id, embedder.dim

        def __init__(self):
            self.calls = 0

        def embed_passages(self, texts):
            self.calls += 1
            if self.calls == 3:
                raise KeyboardInterrupt
            return embedder.embed_passages(texts)

    with pytest.raises(KeyboardInterrupt):
        index_folder(settings, store, Flaky())
    kept = sum(store.stats()["vectors"].values())
    assert kept > 0
    resumed = index_folder(settings, store, embedder)
    assert resumed.files_indexed == 0  # pages were committed before the interruption
    stats = store.stats()
    for t in TYPES:
        assert stats["vectors"][t] == stats["nodes"][t]
    assert 0 < resumed.embedded <= sum(stats["nodes"].values()) - kept


def test_another_process_reads_the_file_while_open(fixture_index):
    settings, _ = fixture_index
    code = (
        "import sys, json; from dgrag.store import Store; import numpy as np\n"
        "st = Store(sys.argv[1], readonly=True)\n"
        "ids, mat = st.vectors.matrix('chunk')\n"
        "hits = st.vectors.knn('chunk', mat[0], 3)\n"
        "print(json.dumps({'n': len(ids), 'top': hits[0][0] == int(ids[0])}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(settings.db_path)], capture_output=True, text=True,
                         check=True)
    res = json.loads(out.stdout)
    assert res["n"] > 10 and res["top"] is True


def test_bad_pages_are_skipped_with_a_reason(indexed, embedder):
    settings = indexed
    store = Store(settings.db_path)
    root = settings.docs_root
    (root / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (root / "gbk.md").write_bytes("# 标题\n\n中文内容，GBK 编码。\n".encode("gbk"))
    (root / "bom.md").write_bytes("\ufeff# BOM page\r\n\r\nText with CRLF.\r\n".encode("utf-8"))
    report = index_folder(settings, store, embedder)
    assert [p for p, _ in report.skipped] == ["binary.md"]
    assert "binary" in report.skipped[0][1]
    titles = dict(store.con.execute("SELECT source_path, text FROM nodes WHERE type='file'").fetchall())
    assert titles["gbk.md"] == "标题" and titles["bom.md"] == "BOM page"


def test_ssim_check_keeps_true_near_duplicates_merged(settings):
    from dataclasses import replace

    s = replace(settings, enable_image_dedup_ssim=True, image_dedup_hash_method="phash")
    with Store(s.db_path) as st:
        report = index_folder(s, st)  # structure only: no embedder
        figures = s.docs_root / "en/application-dev/quick-start/figures"
        small = hashlib.sha256((figures / "newPage-small.png").read_bytes()).hexdigest()
        full = hashlib.sha256((figures / "newPage.png").read_bytes()).hexdigest()
        assert st.images.representative(small) == full
    assert report.images_merged >= 5
