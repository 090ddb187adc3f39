"""Freshness: `dgrag sync` (a git repository's newest commit into the index), `dgrag watch` (a
folder re-indexed after a quiet period) and the sync schedule of `dgrag serve`. Real git
repositories made here with `git init`, real SQLite files, the API on a real port."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from dgrag.cli import main
from dgrag.config import Settings
from dgrag.errors import BranchMissing, DgragError, GitMissing, NotARepository, SyncError
from dgrag.ingest.pipeline import index_folder
from dgrag.store import Store
from dgrag.store.vectors import NODE_TYPES
from dgrag.workflows.sync import Schedule, sync
from dgrag.workflows.watch import Watcher

from conftest import FIXTURE_DOCS

URL = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"
EDITED = "en/application-dev/quick-start/start-overview.md"
DELETED = "en/application-dev/reference/arkui-ts/ts-universal-events-touch.md"
RENAMED = ("en/application-dev/quick-start/start-with-ace-tools.md", "en/application-dev/quick-start/ace-tools.md")
NEW_TEXT = "Freshly synced: the overview now names the Quokka toolchain."
QUESTIONS = ["ACE Tools create app", "如何创建页面", "@State decorator", "touch event table", "two-way sync"]


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "docs", "GIT_AUTHOR_EMAIL": "docs@example.org",
           "GIT_COMMITTER_NAME": "docs", "GIT_COMMITTER_EMAIL": "docs@example.org"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def docs_repo(tmp_path: Path, name: str = "repo") -> Path:
    """A git repository holding the fixture excerpt, one commit on `main`."""
    repo = tmp_path / name
    shutil.copytree(FIXTURE_DOCS, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the excerpt")
    return repo


def edit_delete_rename(repo: Path) -> str:
    """The next commit: one page edited, one deleted, one renamed. Returns its sha."""
    page = repo / EDITED
    page.write_text(page.read_text(encoding="utf-8") + f"\n## Synced section\n\n{NEW_TEXT}\n", encoding="utf-8")
    git(repo, "rm", "-q", DELETED)
    git(repo, "mv", *RENAMED)
    git(repo, "commit", "-q", "-am", "edit, delete, rename")
    return git(repo, "rev-parse", "HEAD")


def content(db: Path) -> dict:
    """What an index holds, without rowids: nodes by id, edges and links by node ids, vectors by
    node id, the ingest log, the images."""
    with Store(db, readonly=True) as st:
        rows = st.con.execute("SELECT rowid, id FROM nodes").fetchall()
        id_of = dict(rows)
        nodes = {}
        for n in st.nodes.by_rowids(id_of):
            nodes[n["id"]] = {k: v for k, v in n.items() if k != "rowid"}
        edges = sorted((id_of[s], id_of[d], t, round(w, 6))
                       for s, d, t, w in st.con.execute("SELECT src, dst, type, weight FROM edges"))
        links = sorted((id_of[s], p, a) for s, p, a in st.con.execute("SELECT src, target_path, anchor FROM links"))
        vectors = {}
        for kind in NODE_TYPES:
            for rowid, vec in st.vectors.of_rowids(kind, [r for r, _ in rows]).items():
                vectors[id_of[rowid]] = np.asarray(vec, dtype=np.float32)
        files = sorted(st.con.execute("SELECT path, content_hash, status, nodes FROM files").fetchall())
        images = sorted(st.con.execute("SELECT sha256, representative FROM images").fetchall())
    return {"nodes": nodes, "edges": edges, "links": links, "vectors": vectors, "files": files, "images": images}


def assert_same_index(got: dict, want: dict) -> None:
    assert got["nodes"].keys() == want["nodes"].keys()
    for node_id, node in want["nodes"].items():
        assert got["nodes"][node_id] == node, node_id
    for key in ("edges", "links", "files", "images"):
        assert got[key] == want[key], key
    assert got["vectors"].keys() == want["vectors"].keys()
    for node_id, vec in want["vectors"].items():  # the same text, embedded in other batches
        assert float(np.dot(got["vectors"][node_id], vec)) > 0.9999, node_id


# ---- sync -----------------------------------------------------------------------------------
def test_a_sync_after_an_edit_a_delete_and_a_rename_equals_a_fresh_index_and_answers_throughout(
        tmp_path, fixture_index, embedder):
    from dgrag.web.service import Service

    repo = docs_repo(tmp_path)
    db = tmp_path / "synced.db"
    shutil.copy(fixture_index[0].db_path, db)  # the excerpt indexed already: the first sync checks hashes only
    settings = Settings(db_path=db, url_template=URL, sync_cache_dir=tmp_path / "cache")
    first = sync(settings, str(repo))
    assert (first.index.files_indexed, first.index.files_unchanged) == (0, 11)
    new = edit_delete_rename(repo)

    service = Service(settings)
    service.retriever.embedder = embedder
    service.handle.get()
    errors: list[str] = []
    answered = [0] * 40
    times: list[float] = []  # when each answer came
    started, syncing = threading.Barrier(41), threading.Event()
    syncing.set()

    def asker(i: int) -> None:
        started.wait()
        while syncing.is_set() or not answered[i]:  # each asks at least once, and until the sync is done
            try:
                assert service.retrieve(QUESTIONS[i % len(QUESTIONS)])["chunks"]
                answered[i] += 1
                times.append(time.monotonic())
            except Exception as exc:  # noqa: BLE001 - any error counts
                errors.append(repr(exc))
                return

    threads = [threading.Thread(target=asker, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    started.wait()
    job = threading.Thread(target=lambda: setattr(service, "_synced", service.sync(str(repo))))
    t0 = time.monotonic()
    job.start()
    job.join()
    t1 = time.monotonic()
    syncing.clear()
    for t in threads:
        t.join()
    assert service._synced.error == "" and errors == [] and min(answered) >= 1
    assert sum(t0 < t < t1 for t in times) >= 40  # answered while the sync wrote the file
    report = service._synced.counts
    assert report["source"]["commit"] == new and report["index"]["files_deleted"] == 2  # the deleted and the old name
    assert report["index"]["files_indexed"] == 2  # the edited page and the new name

    fresh_docs = tmp_path / "fresh"  # the new commit, checked out on its own and indexed from nothing
    git(tmp_path, "clone", "-q", str(repo), str(fresh_docs))
    shutil.rmtree(fresh_docs / ".git")
    fresh = Settings(db_path=tmp_path / "fresh.db", docs_root=fresh_docs, url_template=URL)
    with Store(fresh.db_path) as st:
        index_folder(fresh, st, embedder)
    got, want = content(db), content(fresh.db_path)
    assert RENAMED[1] in {n["source_path"] for n in got["nodes"].values()}
    assert not {RENAMED[0], DELETED} & {n["source_path"] for n in got["nodes"].values()}
    assert any(NEW_TEXT in (n["text"] or "") for n in got["nodes"].values())
    assert_same_index(got, want)

    answer = service.chat("What does the overview name?", use_llm=False)  # answers name what they come from
    assert answer["meta"]["docs_version"]["commit"] == new and answer["meta"]["docs_version"]["pages"] == 10


def test_health_names_the_commit_its_time_and_the_pages(tmp_path, hash_embedder):
    import uvicorn

    from dgrag.web.api import build_api
    from dgrag.web.service import Service

    repo = docs_repo(tmp_path)
    settings = Settings(db_path=tmp_path / "h.db", url_template=URL, sync_cache_dir=tmp_path / "cache",
                        embedder="hash")
    sync(settings, str(repo))
    sha, when = git(repo, "rev-parse", "HEAD"), git(repo, "show", "-s", "--format=%cI", "HEAD")
    service = Service(settings)
    service.retriever.embedder = hash_embedder
    server = uvicorn.Server(uvicorn.Config(build_api(service), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 30
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as resp:
            health = json.loads(resp.read())
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    held = health["docs_version"]
    assert (held["repo"], held["branch"], held["commit"], held["commit_time"]) == (str(repo), "main", sha, when)
    assert held["pages"] == 11 and held["indexed_at"]


def test_a_folder_indexed_later_is_not_named_as_the_commit(tmp_path, docs):
    repo = docs_repo(tmp_path)
    settings = Settings(db_path=tmp_path / "x.db", sync_cache_dir=tmp_path / "cache", embedder="hash")
    sync(settings, str(repo))
    with Store(settings.db_path) as st:
        assert st.meta.docs_version()["commit"]
        index_folder(Settings(db_path=settings.db_path, docs_root=docs), st)  # someone's plain folder now
        held = st.meta.docs_version()
    assert held["commit"] is None and held["pages"] == 11  # the file no longer holds that commit


def test_a_sync_prunes_the_semantic_layer_of_removed_pages(tmp_path):
    from dgrag.workflows import offline_layer

    repo = docs_repo(tmp_path)
    settings = Settings(db_path=tmp_path / "s.db", sync_cache_dir=tmp_path / "cache", embedder="hash")
    report = sync(settings, str(repo))
    with Store(settings.db_path) as st:
        offline_layer(Settings(db_path=settings.db_path, docs_root=report.docs, embedder="hash"), st)
        facts_before = st.semantic.counts()["facts"]
    assert facts_before > 0
    edit_delete_rename(repo)
    again = sync(settings, str(repo))
    assert again.semantic_layer  # the file had a layer: the changed pages get theirs
    with Store(settings.db_path, readonly=True) as st:
        con = st.con
        assert not con.execute("SELECT count(*) FROM nodes WHERE source_path = ?", (DELETED,)).fetchone()[0]
        # nothing points at a node that is gone: edges, links, facts, mentions, vectors
        assert not con.execute("SELECT count(*) FROM edges WHERE src NOT IN (SELECT rowid FROM nodes) "
                               "OR dst NOT IN (SELECT rowid FROM nodes)").fetchone()[0]
        assert not con.execute("SELECT count(*) FROM links WHERE src NOT IN (SELECT rowid FROM nodes)").fetchone()[0]
        assert not con.execute("SELECT count(*) FROM facts WHERE chunk NOT IN (SELECT rowid FROM nodes) OR head NOT IN "
                               "(SELECT rowid FROM nodes) OR tail NOT IN (SELECT rowid FROM nodes)").fetchone()[0]
        assert not con.execute("SELECT count(*) FROM chunk_entities WHERE chunk NOT IN (SELECT rowid FROM nodes) "
                               "OR entity NOT IN (SELECT rowid FROM nodes)").fetchone()[0]
        all_rowids = [r for (r,) in con.execute("SELECT rowid FROM nodes")]
        n_vectors = sum(len(st.vectors.of_rowids(k, all_rowids)) for k in NODE_TYPES)
        assert n_vectors == sum(st.vectors.counts()[k] for k in NODE_TYPES)


def test_a_branch_is_synced_and_a_missing_one_is_named(tmp_path):
    repo = docs_repo(tmp_path)
    git(repo, "checkout", "-q", "-b", "next")
    (repo / "en" / "next-only.md").write_text("# Next only\n\nA page on the next branch.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "next")
    git(repo, "checkout", "-q", "main")
    settings = Settings(db_path=tmp_path / "b.db", sync_cache_dir=tmp_path / "cache", embedder="hash")
    report = sync(settings, str(repo), branch="next", docs="en")
    assert report.checkout.branch == "next" and report.index.files_seen == 7  # en's 6 pages and the new one
    with pytest.raises(BranchMissing, match="no branch 'gone'.*main"):
        sync(settings, str(repo), branch="gone")
    with pytest.raises(SyncError, match="no folder 'nope'"):
        sync(settings, str(repo), docs="nope")
    with pytest.raises(SyncError, match="outside the repository"):
        sync(settings, str(repo), docs="../..")


def test_two_syncs_of_one_clone_take_turns(tmp_path):
    repo = docs_repo(tmp_path)
    git(repo, "checkout", "-q", "-b", "next")
    for i in range(5):
        (repo / f"next-{i}.md").write_text(f"# Next {i}\n\nOnly on the next branch.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "next")
    git(repo, "checkout", "-q", "main")
    base = dict(sync_cache_dir=tmp_path / "cache", embedder="hash")
    jobs = {b: Settings(db_path=tmp_path / f"{b}.db", **base) for b in ("main", "next")}
    threads = [threading.Thread(target=sync, args=(s, str(repo)), kwargs={"branch": b}) for b, s in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for branch, pages in (("main", 11), ("next", 16)):  # each index holds its own branch's pages only
        with Store(jobs[branch].db_path, readonly=True) as st:
            held = st.meta.docs_version()
            assert (held["branch"], held["pages"], held["commit"]) == (branch, pages, git(repo, "rev-parse", branch))


def test_what_is_not_a_repository_and_a_missing_git_are_refused_in_one_line(tmp_path, monkeypatch, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    settings = Settings(db_path=tmp_path / "n.db", sync_cache_dir=tmp_path / "cache", embedder="hash")
    with pytest.raises(NotARepository, match="not a git repository"):
        sync(settings, str(plain))
    with pytest.raises(NotARepository, match="not a folder here"):
        sync(settings, str(tmp_path / "absent"))
    repo = docs_repo(tmp_path)
    with pytest.raises(NotARepository, match="inside the repository .* --docs en"):
        sync(settings, str(repo / "en"))
    assert not settings.db_path.exists()  # nothing written on a refusal
    assert main(["sync", str(plain), "--db", str(settings.db_path)]) == 2
    assert "not a git repository" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(GitMissing, match="git is not installed"):
        sync(settings, str(repo))


def test_the_sync_command_prints_one_line_and_records_the_commit(tmp_path, capsys, monkeypatch):
    repo = docs_repo(tmp_path)
    monkeypatch.setenv("DGRAG_SYNC_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "cli.db"
    assert main(["sync", str(repo), "--db", str(db), "--embedder", "hash", "-q"]) == 0
    sha = git(repo, "rev-parse", "HEAD")
    out = capsys.readouterr().out
    assert out.startswith(f"synced {repo} main at {sha[:10]}") and "11 pages indexed" in out
    edit_delete_rename(repo)
    assert main(["sync", str(repo), "--db", str(db), "-q", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["previous"] == sha and report["index"]["files_deleted"] == 2
    assert f"the index had {sha[:10]}" in report["line"]


# ---- the serve schedule -----------------------------------------------------------------------
def test_serve_syncs_first_when_the_index_is_absent_then_on_its_schedule(tmp_path):
    from dgrag.web.server import refuse_missing_index, start_sync
    from dgrag.web.service import Service

    repo = docs_repo(tmp_path)
    settings = Settings(db_path=tmp_path / "served.db", sync_cache_dir=tmp_path / "cache", embedder="hash",
                        sync_repo=str(repo), sync_every=0.3)
    refuse_missing_index(settings, build_demo_index=False)  # a schedule fills the absent file: not refused
    service = Service(settings)
    schedule = start_sync(service)
    try:
        assert settings.db_path.exists() and service.handle.loaded is not None  # the first sync, before serving
        new = edit_delete_rename(repo)
        deadline = time.time() + 120
        while service.docs_version().get("commit") != new and time.time() < deadline:
            time.sleep(0.1)
        assert service.docs_version()["commit"] == new and service.docs_version()["pages"] == 10
    finally:
        schedule.stop(timeout=60)
    assert schedule.runs >= 1 and schedule.last.startswith(f"synced {repo} main at {new[:10]}")


def test_a_schedule_reports_a_failed_run_and_goes_on(capsys):
    calls = []

    def job() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise SyncError("the remote did not answer")
        return "synced"

    schedule = Schedule(0.05, job).start()
    deadline = time.time() + 10
    while len(calls) < 2 and time.time() < deadline:
        time.sleep(0.02)
    schedule.stop(timeout=5)
    assert len(calls) >= 2 and "sync failed: the remote did not answer" in capsys.readouterr().err


# ---- watch --------------------------------------------------------------------------------------
def test_watch_reindexes_an_edited_file_after_the_quiet_period(indexed):
    settings = Settings(db_path=indexed.db_path, url_template=URL, watch_quiet_s=0.5, watch_poll_s=0.1)
    lines: list[str] = []
    watcher = Watcher(settings, indexed.docs_root, on_run=lambda run: lines.append(run.line()))
    thread = threading.Thread(target=watcher.run, kwargs={"max_runs": 2}, daemon=True)
    thread.start()
    deadline = time.time() + 120
    while watcher.runs < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert watcher.runs == 1 and "11 unchanged" in lines[0]  # at start: in line with the folder already
    page = indexed.docs_root / EDITED
    page.write_text(page.read_text(encoding="utf-8") + f"\n## Watched section\n\n{NEW_TEXT}\n", encoding="utf-8")
    edited = time.monotonic()
    thread.join(timeout=120)
    assert watcher.runs == 2 and time.monotonic() - edited >= 0.5  # not before the quiet period
    assert "(1 files changed): 1 pages indexed" in lines[1]
    with Store(settings.db_path, readonly=True) as st:
        texts = [t for (t,) in st.con.execute("SELECT text FROM nodes WHERE source_path = ?", (EDITED,))]
    assert any(NEW_TEXT in t for t in texts)


def test_watch_refuses_a_tree_over_max_pages(tmp_path, docs, monkeypatch, capsys):
    settings = Settings(db_path=tmp_path / "w.db", embedder="hash", max_pages=5)
    with pytest.raises(DgragError, match="11 pages, more than max_pages"):
        Watcher(settings, docs).run(max_runs=1)
    assert not settings.db_path.exists()  # refused before anything is read or written
    monkeypatch.setenv("DGRAG_MAX_PAGES", "5")
    assert main(["watch", str(docs), "--db", str(settings.db_path), "--max-runs", "1"]) == 2
    assert "more than max_pages (5)" in capsys.readouterr().err


def test_watch_reports_a_failed_reindex_and_goes_on_at_the_next_change(tmp_path, docs):
    settings = Settings(db_path=tmp_path / "w.db", embedder="hash", watch_quiet_s=0.2, watch_poll_s=0.05)
    errors: list[str] = []
    watcher = Watcher(settings, docs, on_error=errors.append)
    thread = threading.Thread(target=watcher.run, kwargs={"max_runs": 2}, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while watcher.runs < 1 and time.time() < deadline:
        time.sleep(0.05)
    away = tmp_path / "away"
    docs.rename(away)  # the folder gone: its re-index fails, and the index keeps its pages
    while not errors and time.time() < deadline:
        time.sleep(0.05)
    assert errors and "re-index failed" in errors[0] and watcher.runs == 1
    with Store(settings.db_path, readonly=True) as st:
        assert st.meta.docs_version()["pages"] == 11
    (away / DELETED).unlink()
    away.rename(docs)  # back, one page fewer: the next run indexes it
    thread.join(timeout=60)
    assert watcher.runs == 2
    with Store(settings.db_path, readonly=True) as st:
        assert st.meta.docs_version()["pages"] == 10
