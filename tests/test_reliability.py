"""Crash safety, hostile input, confinement, foreign index files, concurrency, the public demo."""
from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import FIXTURE_DOCS
from dgrag.config import Settings
from dgrag.errors import AccessDenied, EmbeddingMismatch, IndexFileError, SchemaTooNew
from dgrag.ingest.markdown import parse_page
from dgrag.ingest.pipeline import index_folder
from dgrag.web.index_keeper import safe_extract_zip
from dgrag.web.service import Service
from dgrag.store import Store

ROOT = Path(__file__).resolve().parent.parent


# ---- crash safety -------------------------------------------------------------------------
def _env(server) -> dict:
    env = dict(os.environ, DGRAG_EMBEDDER="openai", DGRAG_EMBEDDING_BASE_URL=server.url + "/v1",
               DGRAG_EMBEDDING_MODEL="loopback-hash-384", DGRAG_EMBEDDING_BATCH_SIZE="8",
               PYTHONPATH=str(ROOT))
    return env


def _counts(db: Path) -> dict:
    with Store(db, readonly=True) as s:
        assert s.integrity_check() == "ok"
        stats = s.stats()
    return {k: stats[k] for k in ("nodes", "edges", "vectors")}


def _run(args, env, kill_after: float | None, took: dict | None = None) -> bool:
    """Run a dgrag command; with `kill_after`, SIGKILL it then if still running. True if killed.
    A run that ends by itself records its duration in `took[args[0]]`."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dgrag", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    if kill_after is None:
        assert proc.wait(timeout=600) == 0
        return False
    try:
        proc.wait(timeout=kill_after)
        if took is not None:
            took[args[0]] = time.monotonic() - start
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def test_sigkill_at_random_points_then_rerun_matches(tmp_path, openai_server_factory):
    server = openai_server_factory(embedding_dim=384, latency_s=0.02)
    env = _env(server)
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    crashed = tmp_path / "crashed.db"
    index, enrich = ["index", str(docs), "-q"], ["enrich", "--step", "all", "-q"]
    pages = sorted(p for p in docs.rglob("*.md"))
    rng = random.Random(42)
    kills = attempts = 0
    took: dict[str, float] = {}
    while kills < 20 and attempts < 80:  # parse, images, embedding, OpenIE, vectors, synonymy
        attempts += 1
        if attempts % 3 == 1:  # keep giving both commands work to be interrupted in
            page = rng.choice(pages)
            page.write_text(page.read_text(encoding="utf-8") + f"\n\n## Note {attempts}\n\nACE Tools builds `demo{attempts}`.\n",
                            encoding="utf-8")
        cmd = index if attempts % 2 else enrich
        if cmd is enrich and not crashed.exists():
            continue
        # a point inside the run: how long a run takes depends on the machine and on how much
        # the edit left to do, so it is learned from the runs that finished
        kills += _run(cmd + ["--db", str(crashed)], env, rng.uniform(0.15, 0.95) * took.get(cmd[0], 5.0), took)
        if crashed.exists():
            with Store(crashed, readonly=True) as s:
                assert s.integrity_check() == "ok"
    assert kills >= 20
    _run(index + ["--db", str(crashed)], env, None)
    _run(enrich + ["--db", str(crashed)], env, None)
    clean = tmp_path / "clean.db"  # an uninterrupted run over the same final pages
    _run(index + ["--db", str(clean)], env, None)
    _run(enrich + ["--db", str(clean)], env, None)
    assert _counts(crashed) == _counts(clean)


# ---- hostile Markdown -----------------------------------------------------------------------
NASTIES = {
    "unclosed-fence.md": "# T\n\n```python\nprint(1)\n" + "x = 1\n" * 2000,
    "deep.md": "# Deep\n\n" + "> " * 5000 + "quote\n" + "".join("  " * i + "- item\n" for i in range(600)),
    "long-line.md": "# Long\n\n" + "word " * 700_000,
    "html-soup.md": "# Soup\n\n<div><table><tr><td><b>x<td>y</table><img src=../../etc/passwd>"
                    "<script>alert(1)</script>" + "<span>" * 3000 + "\n",
    "huge-table.md": "# Table\n\n| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 20000,
    "crlf.md": "# CRLF\r\n\r\nline one\r\n\r\n## Two\r\n\r\ntext\r\n",
    "bom.md": "\ufeff# BOM\n\ntext\n",
    "emphasis.md": "# E\n\n" + "*a **b " * 20000 + "\n" + "[" * 20000 + "\n",
}


def _nasty_tree(root: Path) -> None:
    (root / "figures").mkdir(parents=True)
    for name, text in NASTIES.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "binary.md").write_bytes(bytes(range(256)) * 50)
    (root / "bad-utf8.md").write_bytes(b"# Bad\n\n\xff\xfe\xfa broken \xc3\x28 bytes\n")
    (root / "gbk.md").write_bytes("# 中文标题\n\nGBK 编码的页面。\n".encode("gbk"))
    (root / "figures" / "fake.png").write_bytes(b"not an image at all")
    (root / "figures" / "bomb.png").write_bytes(_bomb_png())
    (root / "images.md").write_text("# Images\n\n![fake](figures/fake.png) ![bomb](figures/bomb.png)\n",
                                    encoding="utf-8")
    (root / "good.md").write_text("# Good page\n\nStill indexed.\n", encoding="utf-8")


def _bomb_png() -> bytes:
    """A small PNG file that declares 100,000 x 100,000 pixels (a decompression bomb)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b"")


def test_hand_made_nasties_are_reported_and_the_rest_indexed(tmp_path):
    docs = tmp_path / "docs"
    _nasty_tree(docs)
    s = Settings(db_path=tmp_path / "n.db", docs_root=docs)
    t0 = time.perf_counter()
    with Store(s.db_path) as store:
        report = index_folder(s, store)
        files = dict(store.con.execute("SELECT path, status FROM files").fetchall())
    assert time.perf_counter() - t0 < 300  # no hang
    skipped = dict(report.skipped)
    assert set(skipped) == {"binary.md"} or set(skipped) <= {"binary.md", "bad-utf8.md"}
    assert files["good.md"] == "ok" and files["gbk.md"] == "ok" and files["images.md"] == "ok"
    ok = [p for p, st in files.items() if st == "ok"]
    assert len(ok) == len(files) - len(skipped)
    problems = "\n".join(report.problems)
    assert "not a readable image" in problems and "figures/fake.png" in problems
    # the bomb is refused from its header (PIL's guard or ours), never decoded
    assert "bomb.png" in problems and ("exceeds the limit" in problems or "DecompressionBomb" in problems)
    assert "etc/passwd" in problems or "outside the docs root" in problems


@hsettings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("#`*_>-|[]()!<>/\\ \n\t:.aZ中文0123456789\r\ufeff")), max_size=400))
def test_generated_markdown_never_crashes_the_parser(text):
    page = parse_page("gen/page.md", text)
    for node in page.nodes:
        assert node["id"].split("-")[0] in ("chunk", "code", "table")
        assert node["line_start"] >= 1 and node["line_end"] >= node["line_start"] - 1


# ---- confinement ------------------------------------------------------------------------------
def test_nothing_outside_the_docs_root_is_read(tmp_path):
    secret = tmp_path / "secret.png"
    from PIL import Image

    Image.new("RGB", (40, 40), "red").save(secret)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "link.png").symlink_to(secret)
    (docs / "outside.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n", encoding="utf-8")
    (docs / "page.md").write_text(
        f"# Page\n\n![a](../secret.png) ![b]({secret}) ![c](file://{secret}) ![d](link.png) "
        f"![e](https://example.com/x.png) [up](../elsewhere.md) [abs]({tmp_path}/elsewhere.md)\n", encoding="utf-8")
    s = Settings(db_path=tmp_path / "c.db", docs_root=docs)
    with Store(s.db_path) as store:
        report = index_folder(s, store)
        assert store.con.execute("SELECT count(*) FROM images").fetchone()[0] == 0
        paths = [p for (p,) in store.con.execute("SELECT DISTINCT source_path FROM nodes")]
    assert paths == ["page.md"] and report.files_seen == 1
    # ../secret.png, link.png and ../elsewhere.md reported; the https image counted, never fetched
    assert sum("outside the docs root" in p or "not read" in p for p in report.problems) >= 3
    assert report.dialect["recognised"]["remote image"] == 1


def test_zip_slip_and_size_limits(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("docs/ok.md", "# ok\n")
        zf.writestr("../../escape.md", "# escape\n")
    with pytest.raises(AccessDenied):
        safe_extract_zip(bad, tmp_path / "out", 10_000_000)
    assert not (tmp_path.parent / "escape.md").exists()
    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.md", "a" * 5_000_000)
    with pytest.raises(Exception, match="expands beyond"):
        safe_extract_zip(big, tmp_path / "out2", 1_000_000)


# ---- foreign index files ----------------------------------------------------------------------
def test_foreign_index_files_are_refused_clearly(tmp_path, fixture_index):
    base = fixture_index[0].db_path
    newer = tmp_path / "newer.db"
    shutil.copy(base, newer)
    con = sqlite3.connect(newer)
    con.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'x')")
    con.commit()
    con.close()
    with pytest.raises(SchemaTooNew, match="newer"):
        Store(newer)
    with Store(base, readonly=True) as st, pytest.raises(EmbeddingMismatch, match="built with"):
        st.check_embedder("other-model", 768)
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(base.read_bytes()[:50_000])
    with pytest.raises(IndexFileError):
        with Store(truncated, readonly=True) as st:
            st.stats()
    crafted = tmp_path / "crafted.db"
    shutil.copy(base, crafted)
    con = sqlite3.connect(crafted)
    con.execute("CREATE TABLE pwn(x)")
    con.execute("CREATE TRIGGER t AFTER INSERT ON meta BEGIN INSERT INTO pwn VALUES (1); END")
    con.commit()
    con.close()
    with pytest.raises(IndexFileError, match="trigger"):
        Store(crafted)
    service = Service(Settings(db_path=tmp_path / "mine.db"))
    shutil.copy(base, tmp_path / "mine.db")
    before = (tmp_path / "mine.db").read_bytes()
    for bad in (newer, truncated, crafted):
        with pytest.raises(IndexFileError):
            service.open_index(bad)
    assert (tmp_path / "mine.db").read_bytes() == before  # nothing of the user's index replaced


# ---- concurrency ------------------------------------------------------------------------------
def test_sixteen_readers_while_a_writer_indexes(indexed, embedder):
    service = Service(indexed)
    service.retriever.embedder = embedder
    service.handle.get()
    errors: list[str] = []
    done = threading.Event()
    answered = [0]

    def reader(i: int) -> None:
        qs = ["ACE Tools create app", "如何创建页面", "@State decorator", "touch event table"]
        while not done.is_set():
            try:
                res = service.retrieve(qs[i % 4])
                assert res["chunks"]
                answered[0] += 1
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    page = indexed.docs_root / "en/application-dev/quick-start/start-overview.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n## Added section\n\nNew text.\n", encoding="utf-8")
    (indexed.docs_root / "en/application-dev/reference/arkui-ts/ts-universal-events-touch.md").unlink()
    old = service.handle.get()
    job = service.index_docs(indexed.docs_root)
    time.sleep(1.0)
    done.set()
    for t in threads:
        t.join()
    assert job.error == "" and service.handle.get() is not old
    assert errors == [] and answered[0] >= 16


def test_public_demo_refuses_writes_without_the_secret(tmp_path, fixture_index):
    shutil.copy(fixture_index[0].db_path, tmp_path / "demo.db")
    service = Service(Settings(db_path=tmp_path / "demo.db", admin_secret="s3cret"))
    for action in (lambda: service.index_docs(FIXTURE_DOCS), lambda: service.enrich("openie"),
                   lambda: service.open_index(tmp_path / "demo.db"), lambda: service.check_admin("wrong")):
        with pytest.raises(AccessDenied):
            action()
    service.check_admin("s3cret")  # the right secret passes
    assert service.read_only and service.health()["read_only"] is True


def test_an_svg_image_is_reported_as_a_vector_image_not_as_unreadable(tmp_path):
    from dgrag.ingest.images import ImageRejected, read_image

    svg = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>db</text></svg>'
    (tmp_path / "diagram.drawio.svg").write_bytes(svg)
    (tmp_path / "named-png.png").write_bytes(svg)  # sniffed by its first element, whatever its name
    (tmp_path / "broken.png").write_bytes(b"\x89PNG not really")
    for name in ("diagram.drawio.svg", "named-png.png"):
        with pytest.raises(ImageRejected, match="SVG"):
            read_image(tmp_path, name, max_bytes=1 << 20, max_pixels=1 << 20)
    with pytest.raises(ImageRejected, match="not a readable image"):
        read_image(tmp_path, "broken.png", max_bytes=1 << 20, max_pixels=1 << 20)
