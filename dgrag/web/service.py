"""What the app and the REST API share: one index, one writer at a time, many readers.

Queries run against the loaded snapshot (`IndexHandle`); an indexing job takes the writer
lock, writes the file, then builds the new snapshot aside and swaps it in, so chat keeps
answering throughout.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterator

from ..backends.embedder_cpu import lower_priority
from ..config import PROJECT_ROOT, RetrievalConfig, Settings
from ..core import chat_to_api
from ..errors import AccessDenied, Cancelled, ConfigError, DgragError, IndexFileError, IndexNotReady, SyncError
from ..workflows import Job, JobCancelled, Progressive, Writer  # noqa: F401 - Job, JobCancelled: re-exported
from .asklog import QuestionLog, new_answer_id

BUNDLED_CORPUS = PROJECT_ROOT / "data" / "arkui-x-docs"  # shipped with the repo: CC BY 4.0, see its LICENSE
SHARED_CORPUS = PROJECT_ROOT.parent / "shared" / "corpus" / "arkui-x-docs"
EXCERPT = PROJECT_ROOT / "tests" / "fixtures" / "docs"
DEMO_URL = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def demo_docs() -> Path:
    """The demo corpus: the copy shipped in data/ (a clone or a Space has it), else the shared
    ArkUI-X docs beside the checkout, else the test excerpt (an installed package has neither)."""
    return next((d for d in (BUNDLED_CORPUS, SHARED_CORPUS) if d.is_dir()), EXCERPT)


class Service:
    def __init__(self, settings: Settings):
        from ..retrieve.loaded import IndexHandle

        self.settings = settings
        self.handle = IndexHandle(settings.db_path, settings)
        self.writer = Writer(after=self.handle.reload)  # one writer; readers see each commit after a reload
        self.build: Progressive | None = None  # the batched build running or last run, if any
        self.first_start = False  # that build is the first start's: no index to answer from before it
        self._retriever = None
        self._init_lock = threading.Lock()
        self._described: tuple[tuple, dict] | None = None  # (the file's state, its description)
        self.shipped_note = ""  # what became of a shipped prebuilt index at the first start, if any
        self.log = QuestionLog(settings)  # every answer given, and the feedback on it

    @property
    def job(self) -> Job | None:
        return self.writer.job

    @property
    def write_lock(self) -> threading.Lock:
        return self.writer.lock

    # ---- guards -------------------------------------------------------------------------
    def check_admin(self, secret: str | None) -> None:
        want = self.settings.admin_secret
        if want and not _same(secret or "", want):
            raise AccessDenied("this action needs the admin secret (the demo is read-only without it)")

    @property
    def read_only(self) -> bool:
        return bool(self.settings.admin_secret)

    # ---- the index ----------------------------------------------------------------------
    def demo_build(self) -> Progressive | None:
        """The first start's build of the demo index, when the file is absent or a build of it
        did not finish (None otherwise: an index someone built stays as it is)."""
        db = Path(self.settings.db_path)
        docs = Path(self.settings.docs_root or demo_docs())
        bundled = docs in (BUNDLED_CORPUS, SHARED_CORPUS, EXCERPT)
        build = Progressive(self.settings, docs, DEMO_URL if bundled else self.settings.url_template,
                            self.writer, self.settings.include)
        if db.exists() and (build.finished or not build.builds_this_file()):  # someone else's index
            return None
        return build

    def start_demo_build(self) -> Progressive | None:
        """Start (or resume) the demo build in the background; questions are answered from each
        batch as it commits. With no index file yet, a shipped prebuilt index that fits is copied
        into place first and served at once; only its pages that differ are indexed again."""
        installed = self.install_shipped()
        if installed is not None and not installed.same:
            self._refresh_shipped(installed)
            return None
        self.build = self.demo_build()
        self.first_start = self.build is not None
        if self.build is not None:
            self.build.start()
        return self.build

    def install_shipped(self):
        """The shipped index copied to the absent index file (`workflows.shipped`), or None (none
        found, a file there already, or refused: `shipped_note` says why, and the build runs)."""
        from ..workflows.shipped import SnapshotRefused, install

        db = Path(self.settings.db_path)
        if db.exists():
            return None
        docs = Path(self.settings.docs_root or demo_docs())
        try:
            found = install(self.settings, docs, db)
        except SnapshotRefused as exc:
            self.shipped_note = f"shipped index refused: {exc}; building the index instead"
            return None
        if found is not None:
            what = "as it is" if found.same else (f"at once; {len(found.changed)} changed and {len(found.removed)} "
                                                   "removed pages are indexed again in the background")
            self.shipped_note = f"shipped index {found.source} served {what}"
        return found

    def _refresh_shipped(self, found) -> None:
        """Index the pages of the shipped index that differ, as the writer, in the background."""
        from ..store import Store
        from ..workflows.shipped import refresh

        build = self.demo_build() or Progressive(self.settings, Path(self.settings.docs_root or demo_docs()),
                                                 DEMO_URL, self.writer, self.settings.include)

        def work(job: Job) -> dict:
            lower_priority(10)
            with Store(self.settings.db_path) as store:
                counts = refresh(build.settings, store, found, progress=job.on_progress)
                build.mark_done(store)
            return counts

        threading.Thread(target=self.writer.run, args=(f"shipped index: {len(found.changed) + len(found.removed)} "
                                                       "pages differ", work),
                         name="dgrag-shipped-refresh", daemon=True).start()

    def ensure_index(self) -> None:
        """Build the demo index (all of it, in the calling thread) if it is absent or unfinished."""
        build = self.demo_build()
        if build is not None:
            status = build.run()
            if status.error:
                raise DgragError(f"building the demo index failed: {status.error}")

    def build_banner(self) -> str:
        """One line on the first start's build (empty when none runs or it is done)."""
        return self.build.status().banner() if self.build is not None else ""

    def ready(self) -> None:
        """Raise IndexNotReady while the first batch of the first build is still running."""
        build = self.build
        if build is not None and self.first_start and build.status().batches_done == 0:
            if build.status().error:
                raise IndexNotReady(f"building the demo index failed: {build.status().error}")
            raise IndexNotReady("the demo index is being built; its first pages are ready in about a minute "
                                "(see /health: build)")

    @property
    def retriever(self):
        if self._retriever is None:
            with self._init_lock:
                if self._retriever is None:
                    from ..retrieve.retriever import Retriever

                    self._retriever = Retriever(self.settings, self.handle)
        return self._retriever

    def health(self) -> dict:
        loaded = self.handle.loaded
        s = self.settings
        out = {"status": "ok", "index_path": str(s.db_path),
               "index_exists": Path(s.db_path).exists(), "hipporag_initialized": loaded is not None,
               "index_loaded": loaded is not None, "read_only": self.read_only,
               "rerank_backend": s.rerank_backend, "llm_configured": s.llm_configured,
               "job": None if self.job is None else {"name": self.job.name, "done": self.job.done},
               "build": None if self.build is None else self.build.status().as_dict(),
               "question_log": self.log.describe(),
               "limits": {"max_query_chars": s.max_query_chars, "max_query_tokens": s.max_query_tokens,
                          "max_body_bytes": s.max_body_bytes, "request_timeout_s": s.request_timeout_s}}
        if out["index_exists"]:
            try:
                out["index"] = self._description()
                out["embedding_model"] = out["embedder"] = out["index"]["embedding_model"]
            except DgragError as exc:
                out.update(status="degraded", index_error=str(exc))
        if loaded is not None:
            out.update(nodes=int(loaded.n_nodes), edges=int(loaded.n_edges), facts=int(loaded.fact_rowids.size),
                       load_seconds=round(loaded.load_seconds, 3))
        out["docs_version"] = self.docs_version()
        return out

    def docs_version(self) -> dict:
        """What the answers come from: the loaded snapshot's pages, when they were indexed and the
        commit they were synced from (store/meta.py); before a load, the file's ({} without one)."""
        from ..store.meta import docs_version_of

        loaded = self.handle.loaded
        if loaded is not None:
            return docs_version_of(loaded.meta)
        if not Path(self.settings.db_path).exists():
            return {}
        try:
            return self._description().get("docs_version") or {}
        except DgragError:
            return {}

    def _description(self) -> dict:
        """The file's Store.describe(), read again only when the file or its WAL changed (a
        write, another file moved in): /health is polled, and should not open SQLite each time."""
        from ..store import Store

        path = Path(self.settings.db_path)
        # an empty WAL (the first reader creates one) holds no write: it counts as none
        state = tuple((info.st_ino, info.st_mtime_ns, info.st_size) if (info := _stat(p)) and info.st_size else None
                      for p in (path, Path(f"{path}-wal")))
        cached = self._described
        if cached is not None and cached[0] == state:
            return dict(cached[1])
        with Store(path, readonly=True) as st:
            described = st.describe()
        self._described = (state, described)
        return dict(described)

    def stats(self) -> dict:
        from ..store import Store

        with Store(self.settings.db_path, readonly=True) as st:
            return {**st.stats(), "enrichment": st.logs.enrich_counts(), "skipped_files": st.logs.skipped_files()[:50]}

    # ---- answering ----------------------------------------------------------------------
    def check_request(self, query, config: dict | RetrievalConfig | None = None) -> tuple[str, RetrievalConfig]:
        """The query as it will be answered and the request's whole retrieval config; a query too
        long or empty, or a retrieval_config with an unknown or out-of-range value, is refused here
        (QueryRejected / ConfigError), before any work. The edge calls it once and passes both
        down: values it returned pass again (and through the retriever) unchecked."""
        from ..retrieve.retriever import check_query

        query = check_query(query, self.settings)
        if isinstance(config, RetrievalConfig):
            return query, config
        if config is not None and not isinstance(config, dict):
            raise ConfigError("retrieval_config must be an object")
        return query, self.settings.retrieval.merged(config)

    def admit(self, query, config: dict | RetrievalConfig | None = None) -> tuple[str, RetrievalConfig]:
        """A request let in, in the one order every route keeps: its values checked first
        (`check_request`: a bad query is a 422 even during the first build), then the index's
        readiness (IndexNotReady, a 503). What it returns passes down unchecked."""
        query, config = self.check_request(query, config)
        self.ready()
        return query, config

    def retrieve(self, query: str, config: dict | RetrievalConfig | None = None) -> dict:
        query, config = self.admit(query, config)  # before the retriever: it loads the index
        return self.retriever.retrieve(query, config)

    def answerer(self, use_llm: bool = True):
        from ..answer import Answerer

        return Answerer(self.settings, self.retriever, llm="auto" if use_llm else None)

    def chat_events(self, query: str, history: list[dict] | None = None, use_rag: bool = True,
                    use_llm: bool = True, config: dict | RetrievalConfig | None = None,
                    cancel: threading.Event | None = None, channel: str = "rest",
                    answer_id: str | None = None) -> Iterator[dict]:
        """The answer's events (dgrag.answer); `cancel` set: it stops at its next step."""
        query, config = self.admit(query, config)
        yield from self._answer(query, history, use_rag, use_llm, config, cancel, channel, answer_id)

    def _answer(self, query: str, history: list[dict] | None, use_rag: bool, use_llm: bool,
                config: RetrievalConfig, cancel: threading.Event | None, channel: str = "rest",
                answer_id: str | None = None) -> Iterator[dict]:
        """An admitted request's answer events; every answer (REST, stream, /v1, MCP, UI) names
        the docs it came from, and is logged here, once, whatever the channel ('chat', 'widget',
        'rest', 'v1', 'mcp'): its `done` event carries its `answer_id` (also in `meta`), which
        feedback names."""
        answer_id = answer_id or new_answer_id()
        asked_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        results = []
        for ev in self.answerer(use_llm).chat(query, history or [], config, use_rag=use_rag, cancel=cancel):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                version = self.docs_version()
                meta = {**ev.get("meta", {}), "docs_version": version, "answer_id": answer_id}
                self.log.record(answer_id, **_logged(query, results, ev["answer"], meta, channel, asked_at),
                                index_state=json.dumps(version, sort_keys=True))
                ev = {**ev, "answer_id": answer_id, "meta": meta}
            yield ev

    def chat(self, query: str, use_rag: bool = True, use_llm: bool = True, config: dict | None = None,
             history: list[dict] | None = None, cancel: threading.Event | None = None,
             channel: str = "rest") -> dict:
        """The seed's /chat response, plus `meta` (the agent's rounds, citations, tokens, images);
        `cancel` set: Cancelled at the answer's next step."""
        t0 = time.perf_counter()
        query, config = self.admit(query, config)  # the response echoes the query as answered
        results, answer, meta = [], "", {}
        for ev in self._answer(query, history, use_rag, use_llm, config, cancel, channel):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                answer, meta = ev["answer"], ev.get("meta", {})
        Cancelled.check(cancel)  # an answer cut short is no answer
        return {**chat_to_api(query, results, answer, time.perf_counter() - t0), "meta": meta,
                "answer_id": meta.get("answer_id"), "components": meta.get("components", [])}

    # ---- writing ------------------------------------------------------------------------
    def run_job(self, name: str, work: Callable[[Job], dict], secret: str | None = None) -> Job:
        """Run `work` as the one writer; readers keep the old snapshot until it finishes."""
        self.check_admin(secret)

        def lowered(job: Job) -> dict:
            lower_priority(10)  # the job's thread and its embedding workers: queries get the CPU first
            return work(job)

        return self.writer.run(name, lowered)

    def cancel_job(self, secret: str | None = None) -> str:
        """Ask the running job to stop at its next step (what it committed stays); needs the
        admin secret like every other write."""
        self.check_admin(secret)
        return self.writer.cancel()

    def index_docs(self, docs: Path, url_template: str = "", secret: str | None = None) -> Job:
        """The Index tab's "index this folder": the first start's batched path (each batch
        parsed, embedded and given the offline semantic layer, questions answered from each
        batch as it commits, the banner showing how far it got, a rerun resuming)."""
        docs = Path(docs)
        if not docs.is_dir():
            raise DgragError(f"not a folder on the server: {docs}")
        self.check_admin(secret)
        if self.build is not None and self.build.status().running:
            raise DgragError(f"{self.build.status().title} is still being built; index a folder when it is done")
        build = Progressive(self.settings, docs, url_template, self.writer, self.settings.include,
                            title=f"the index of {docs.name or docs}")
        build.start_over()
        self.build, self.first_start = build, False
        return self.run_job("index", build.run_in, secret)

    def sync(self, repo: str = "", branch: str = "", docs: str = "", secret: str | None = None) -> Job:
        """Sync a docs repository (the settings' `sync_repo` by default) into this index as the one
        writer (workflows/sync.py): questions are answered from the snapshot loaded before until
        the sync has committed, then from the new one."""
        from ..workflows.sync import sync

        s = self.settings
        repo = repo or s.sync_repo
        if not repo:
            raise ConfigError("no repository to sync: give one, or set sync_repo (DGRAG_SYNC_REPO)")

        def work(job: Job) -> dict:
            return sync(s, repo, branch=branch or s.sync_branch, docs=docs or s.sync_docs,
                        progress=job.on_progress).as_dict()

        return self.run_job(f"sync {repo}", work, secret)

    def scheduled_sync(self) -> str:
        """One run of the serve schedule (the server's own: no secret asked): its line, or
        SyncError with why it failed."""
        job = self.sync(secret=self.settings.admin_secret)
        if job.error:
            raise SyncError(job.error)
        return job.counts["line"]

    def enrich(self, step: str, secret: str | None = None) -> Job:
        def work(job: Job) -> dict:
            from ..store import Store
            from ..workflows import enrich_index

            with Store(self.settings.db_path) as store:
                steps = () if step == "synonymy" else (step,)
                return enrich_index(self.settings, store, steps, progress=job.on_progress,
                                    cancel=job.cancel).as_dict()

        return self.run_job(step, work, secret)

    def snapshot(self, dest_dir: Path | None = None) -> Path:
        """A consistent single-file copy of the index (VACUUM INTO), taken while serving."""
        from ..retrieve.loaded import ensure_graph_cache
        from ..store import Store

        dest_dir = Path(dest_dir or tempfile.mkdtemp(prefix="dgrag-snapshot-"))
        dest = dest_dir / f"{Path(self.settings.db_path).stem}-{time.strftime('%Y%m%d-%H%M%S')}.db"
        ensure_graph_cache(self.settings.db_path)  # the copy starts without building anything
        with Store(self.settings.db_path, readonly=True) as st:
            st.copy_to(dest)
        return dest

    def open_index(self, uploaded: Path, secret: str | None = None) -> dict:
        """Validate a teammate's index file, then make it the served one (the old file is kept)."""
        from ..backends.embedder_choice import make_embedder, resolve_embedder
        from ..store import Store

        self.check_admin(secret)
        uploaded = Path(uploaded)
        with Store(uploaded, readonly=True) as st:
            if st.quick_check() != "ok":
                raise IndexFileError("the uploaded file fails SQLite's integrity check")
            # the file decides the model (a server started with an explicit other one refuses it);
            # it must be one this server can load, at the recorded dimension
            emb = make_embedder(resolve_embedder(self.settings, st.meta.items(), "the uploaded file"), role="query")
            st.check_embedder(emb.model_id, emb.dim)
            stats = st.stats()
        target = Path(self.settings.db_path)
        with self.write_lock, self.log.file_lock:  # the question log writes to no file while it moves
            staged = target.with_suffix(".incoming.db")
            shutil.copyfile(uploaded, staged)
            if target.exists():
                shutil.copyfile(target, target.with_suffix(".previous.db"))
            os.replace(staged, target)
            for extra in (Path(f"{target}-wal"), Path(f"{target}-shm")):
                extra.unlink(missing_ok=True)
            self.handle.reload()
        return stats


def _logged(query: str, results: list, answer: str, meta: dict, channel: str, asked_at: str) -> dict:
    """One answer as the log keeps it: the retrieved section ids best first (the question's own
    search first, then the agent's further ones), the confidence of the question's search, and
    `unanswered` where the docs did not seem to cover it or nothing was found."""
    from ..core import language_of

    sections = list(dict.fromkeys(ref.id for res in results for ref in res.chunks))
    return {"channel": channel, "question": query, "language": language_of(query), "sections": sections,
            "confidence": meta.get("confidence"), "asked_at": asked_at, "answer_text": answer,
            "unanswered": meta.get("answerable") is False or not sections}


def _same(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())


def safe_extract_zip(zip_path: Path, target: Path, max_bytes: int) -> Path:
    """Unpack a docs zip: no member may land outside `target`; total size is capped."""
    target = Path(target).resolve()
    total = 0
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            dest = (target / info.filename).resolve()
            if dest != target and target not in dest.parents:
                raise AccessDenied(f"zip member escapes the target folder: {info.filename}")
            if info.external_attr >> 16 & 0o170000 == 0o120000:
                raise AccessDenied(f"zip member is a symlink: {info.filename}")
            total += info.file_size
            if total > max_bytes:
                raise DgragError(f"zip expands beyond {max_bytes} bytes")
        zf.extractall(target)
    return target
