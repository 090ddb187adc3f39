"""The prebuilt index shipped with the Space: scripts/publish_snapshot.py builds a small one from the
fixture excerpt (as it builds the demo's); laid out in a Hub cache as `preload_from_hub` leaves it
(a blob, a snapshot folder linking to it, refs/main), the app finds it offline at its first start,
serves it at once without building, indexes again only a page that changed, and refuses (one line,
then the normal build) a snapshot of another index version, embedding model or corpus. The 60 s
figure on the whole demo is a bench (bench/shipped.py)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from app_server import free_port

from dgrag.config import Settings
from dgrag.store import Store
from dgrag.web.service import Service

ROOT = Path(__file__).resolve().parent.parent
REPO = "datasets/someone/dgrag-demo-index"
FILE = "arkui-x.snapshot.db"
HANG = 300


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(docs, snapshot): the excerpt's prebuilt index, as scripts/publish_snapshot.py writes it."""
    from conftest import FIXTURE_DOCS

    root = tmp_path_factory.mktemp("published")
    docs = root / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    out = root / "dist" / FILE
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, str(ROOT / "scripts" / "publish_snapshot.py"), "--docs", str(docs),
                    "--work", str(root / "work.db"), "--out", str(out)], check=True, env=env, cwd=root,
                   stdout=subprocess.DEVNULL)
    return docs, out


def hub_cache(root: Path, snapshot: Path, repo: str = REPO) -> Path:
    """`snapshot` laid out as preload_from_hub leaves it: blobs/<sha>, snapshots/<rev>/<file> -> blob."""
    kind, owner, name = repo.split("/")
    folder = root / "hub" / f"{kind}--{owner}--{name}"
    data = snapshot.read_bytes()
    blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(data)
    rev = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(rev)
    link = folder / "snapshots" / rev / FILE
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return root / "hub"


def _settings(tmp_path: Path, docs: Path, **kw) -> Settings:
    return Settings(db_path=tmp_path / "served" / "arkui-x.db", docs_root=docs, snapshot_repo=REPO, **kw)


def test_app_py_serves_the_shipped_index_at_once_offline(tmp_path, published):
    docs, snapshot = published
    cache = hub_cache(tmp_path, snapshot)
    port = free_port()
    db = tmp_path / "served" / "arkui-x.db"
    env = {**os.environ, "DGRAG_DB_PATH": str(db), "DGRAG_DOCS_ROOT": str(docs), "DGRAG_SNAPSHOT_REPO": REPO,
           "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        health = _wait_health(proc, url)
        body = json.dumps({"query": "How do I create an application with ACE Tools?"}).encode()
        req = urllib.request.Request(url + "/retrieve", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=HANG) as resp:
            found = json.loads(resp.read())
    finally:
        proc.terminate()
        err = proc.communicate(timeout=60)[1]
    assert "shipped index" in err and "served as it is" in err, err
    assert health["build"] is None and health["job"] is None  # nothing to build: the whole index is in
    with Store(snapshot, readonly=True) as st:
        assert health["nodes"] == sum(st.stats()["nodes"].values()) and health["facts"] > 0  # the dual graph
    assert found["chunks"]


def _wait_health(proc, url: str) -> dict:
    deadline = time.time() + HANG
    while True:
        assert proc.poll() is None, proc.stderr.read()
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                health = json.loads(resp.read())
            if health.get("index_loaded"):
                return health
        except OSError:
            pass
        assert time.time() < deadline, "the app did not start"
        time.sleep(0.3)


def test_a_changed_page_is_indexed_again_alone(tmp_path, published, monkeypatch):
    docs0, snapshot = published
    docs = tmp_path / "docs"
    shutil.copytree(docs0, docs)
    page = sorted(docs.rglob("*.md"))[0]
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Shipped twice\n\nA section added after publishing.\n",
                    encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache(tmp_path, snapshot)))
    service = Service(_settings(tmp_path, docs))
    assert service.start_demo_build() is None  # no build: the shipped index answers at once
    assert "1 changed and 0 removed" in service.shipped_note
    service.handle.get()  # served at once
    deadline = time.time() + HANG
    while service.job is None or not service.job.done:
        assert time.time() < deadline
        time.sleep(0.1)
    assert not service.job.error, service.job.error
    assert service.job.counts["files_indexed"] == 1  # the changed page, and only it
    assert "Shipped twice" in json.dumps(service.retrieve("Shipped twice: a section added after publishing")["chunks"])
    restarted = Service(_settings(tmp_path, docs))
    assert restarted.start_demo_build() is None and restarted.shipped_note == ""  # done: nothing more to do


def test_a_snapshot_read_by_an_older_reader_is_served_and_read_again(tmp_path, published, monkeypatch):
    """This dgrag reads pages differently from the one that published the snapshot (its reader's
    version is newer): served at once, then every page parsed again in the background, and only
    what now reads differently embedded."""
    from dgrag.ingest import pipeline

    docs0, snapshot = published
    monkeypatch.setattr(pipeline, "READER", pipeline.READER + 1)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache(tmp_path, snapshot)))
    service = Service(_settings(tmp_path, docs0))
    assert service.start_demo_build() is None and "read again by this dgrag's newer reader" in service.shipped_note
    deadline = time.time() + HANG
    while service.job is None or not service.job.done:
        assert time.time() < deadline
        time.sleep(0.1)
    assert not service.job.error, service.job.error
    assert service.job.counts["files_indexed"] == len(list(docs0.rglob("*.md")))
    assert Service(_settings(tmp_path, docs0)).start_demo_build() is None  # current now: nothing more to do


def _older_schema(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)")
    con.commit()
    con.close()


def _other_corpus(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = json_set(value, '$.name', 'another-docs') WHERE key = 'shipped_corpus'")
    con.commit()
    con.close()


def _other_model(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = 'someone/other-model' WHERE key = 'embedding_model'")
    con.commit()
    con.close()


@pytest.mark.parametrize("change, message", [(_older_schema, "index version"), (_other_corpus, "corpus"),
                                             (_other_model, "embedding model")])
def test_a_snapshot_of_another_version_or_corpus_is_refused_and_the_build_runs(tmp_path, published, monkeypatch,
                                                                              change, message):
    docs, snapshot = published
    mine = tmp_path / "mine" / FILE
    mine.parent.mkdir()
    shutil.copy(snapshot, mine)
    change(mine)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache(tmp_path, mine)))
    service = Service(_settings(tmp_path, docs, background_batch_pages=1000))
    build = service.start_demo_build()
    assert build is not None  # the normal first-start build
    note = service.shipped_note
    assert note.startswith("shipped index refused: ") and message in note and "\n" not in note, note
    build.stop.set()
    build.join(HANG)


def test_without_a_snapshot_the_first_start_is_as_before(tmp_path, published, monkeypatch):
    docs, _ = published
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    service = Service(dataclasses.replace(_settings(tmp_path, docs), snapshot_repo="datasets/nobody/nothing"))
    build = service.start_demo_build()
    assert build is not None and service.first_start and service.shipped_note == ""
    build.stop.set()
    build.join(HANG)
