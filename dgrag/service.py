"""What the app and the REST API share: one index, one writer at a time, many readers.

Queries run against the loaded snapshot (`IndexHandle`); an indexing job takes the writer
lock, writes the file, then builds the new snapshot aside and swaps it in, so chat keeps
answering throughout.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from .backends.embedders import lower_priority
from .config import PROJECT_ROOT, RetrievalConfig, Settings
from .core import chat_to_api
from .errors import AccessDenied, ConfigError, DgragError, IndexFileError

BUNDLED_CORPUS = PROJECT_ROOT / "data" / "arkui-x-docs"  # shipped with the repo: CC BY 4.0, see its LICENSE
SHARED_CORPUS = PROJECT_ROOT.parent / "shared" / "corpus" / "arkui-x-docs"
EXCERPT = PROJECT_ROOT / "tests" / "fixtures" / "docs"
DEMO_URL = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"
# The first-start demo: the getting-started half of the corpus in both languages (78 pages,
# minutes to embed on 2 cores); the whole corpus is one click away in the Index tab.
DEMO_INCLUDE = ("README.md,*/README.md,*/application-dev/README.md,*/application-dev/quick-start/*,"
                "*/application-dev/tutorial/*,*/application-dev/tools/*")


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def demo_docs() -> Path:
    """The demo corpus: the copy shipped in data/ (a clone or a Space has it), else the shared
    ArkUI-X docs beside the checkout, else the test excerpt (an installed package has neither)."""
    return next((d for d in (BUNDLED_CORPUS, SHARED_CORPUS) if d.is_dir()), EXCERPT)


@dataclass
class Job:
    name: str
    log: list[str] = field(default_factory=list)
    progress: dict[str, tuple[int, int]] = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    done: bool = False
    error: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.time)

    def on_progress(self, stage: str, done: int, total: int) -> None:
        if self.cancel.is_set():
            raise JobCancelled(self.name)
        self.progress[stage] = (done, total)


class JobCancelled(DgragError):
    """An indexing job was cancelled; what it committed stays, a rerun resumes."""


class Service:
    def __init__(self, settings: Settings):
        from .retrieve.loaded import IndexHandle

        self.settings = settings
        self.handle = IndexHandle(settings.db_path)
        self.write_lock = threading.Lock()
        self.job: Job | None = None
        self._retriever = None
        self._init_lock = threading.Lock()
        self._described: tuple[tuple, dict] | None = None  # (the file's state, its description)

    # ---- guards -------------------------------------------------------------------------
    def check_admin(self, secret: str | None) -> None:
        want = self.settings.admin_secret
        if want and not _same(secret or "", want):
            raise AccessDenied("this action needs the admin secret (the demo is read-only without it)")

    @property
    def read_only(self) -> bool:
        return bool(self.settings.admin_secret)

    # ---- the index ----------------------------------------------------------------------
    def ensure_index(self, progress: Callable[[str, int, int], None] | None = None) -> None:
        """Build the demo index from the bundled corpus if the file is absent."""
        if Path(self.settings.db_path).exists():
            return
        with self.write_lock:
            if Path(self.settings.db_path).exists():
                return
            docs = Path(self.settings.docs_root or demo_docs())
            bundled = docs in (BUNDLED_CORPUS, SHARED_CORPUS, EXCERPT)
            whole = docs in (BUNDLED_CORPUS, SHARED_CORPUS)  # first start: its getting-started half
            self._index(docs, progress, DEMO_URL if bundled else self.settings.url_template,
                        self.settings.include or (DEMO_INCLUDE if whole else ""))
            self.handle.reload()

    def _index(self, docs: Path, progress, url_template: str, include: str = ""):
        from .backends.embedders import embedder_for_store
        from .ingest.pipeline import index_folder
        from .store import Store

        s = Settings(**{**self.settings.__dict__, "docs_root": docs, "url_template": url_template,
                        "include": include})
        with Store(s.db_path) as store:  # the indexer's embedder: the file's model, its own instance
            return index_folder(s, store, embedder_for_store(s, store), progress)  # the caller reloads once

    @property
    def retriever(self):
        if self._retriever is None:
            with self._init_lock:
                if self._retriever is None:
                    from .retrieve.retriever import Retriever

                    self._retriever = Retriever(self.settings, self.handle)
        return self._retriever

    def health(self) -> dict:
        loaded = self.handle._current
        s = self.settings
        out = {"status": "ok", "index_path": str(s.db_path),
               "index_exists": Path(s.db_path).exists(), "hipporag_initialized": loaded is not None,
               "index_loaded": loaded is not None, "read_only": self.read_only,
               "rerank_backend": s.rerank_backend, "llm_configured": bool(s.llm_base_url and s.llm_model),
               "job": None if self.job is None else {"name": self.job.name, "done": self.job.done},
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
        return out

    def _description(self) -> dict:
        """The file's Store.describe(), read again only when the file or its WAL changed (a
        write, another file moved in): /health is polled, and should not open SQLite each time."""
        from .store import Store

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
        from .store import Store

        with Store(self.settings.db_path, readonly=True) as st:
            return {**st.stats(), "enrichment": st.logs.enrich_counts(), "skipped_files": st.logs.skipped_files()[:50]}

    # ---- answering ----------------------------------------------------------------------
    def check_request(self, query, config: dict | RetrievalConfig | None = None) -> tuple[str, RetrievalConfig]:
        """The query as it will be answered and the request's whole retrieval config; a query too
        long or empty, or a retrieval_config with an unknown or out-of-range value, is refused here
        (QueryRejected / ConfigError), before any work. The edge calls it once and passes both
        down: values it returned pass again (and through the retriever) unchecked."""
        from .retrieve.retriever import check_query

        query = check_query(query, self.settings)
        if isinstance(config, RetrievalConfig):
            return query, config
        if config is not None and not isinstance(config, dict):
            raise ConfigError("retrieval_config must be an object")
        return query, self.settings.retrieval.merged(config)

    def retrieve(self, query: str, config: dict | RetrievalConfig | None = None) -> dict:
        return self.retriever.retrieve(*self.check_request(query, config))

    def answerer(self, use_llm: bool = True):
        from .answer import Answerer

        return Answerer(self.settings, self.retriever, llm="auto" if use_llm else None)

    def chat_events(self, query: str, history: list[dict] | None = None, use_rag: bool = True,
                    use_llm: bool = True, config: dict | RetrievalConfig | None = None) -> Iterator[dict]:
        query, config = self.check_request(query, config)
        yield from self.answerer(use_llm).chat(query, history or [], config, use_rag=use_rag)

    def chat(self, query: str, use_rag: bool = True, use_llm: bool = True, config: dict | None = None,
             history: list[dict] | None = None) -> dict:
        """The seed's /chat response, plus `meta` (the agent's rounds, citations, tokens, images)."""
        t0 = time.perf_counter()
        query, config = self.check_request(query, config)  # the response echoes the query as answered
        results, answer, meta = [], "", {}
        for ev in self.chat_events(query, history, use_rag, use_llm, config):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                answer, meta = ev["answer"], ev.get("meta", {})
        return {**chat_to_api(query, results, answer, time.perf_counter() - t0), "meta": meta}

    # ---- writing ------------------------------------------------------------------------
    def run_job(self, name: str, work: Callable[[Job], dict], secret: str | None = None) -> Job:
        """Run `work` as the one writer; readers keep the old snapshot until it finishes."""
        self.check_admin(secret)
        if not self.write_lock.acquire(blocking=False):
            raise DgragError(f"another indexing job is running ({self.job.name if self.job else '?'})")
        job = self.job = Job(name)
        try:
            lower_priority(10)  # the job's thread and its embedding workers: queries get the CPU first
            job.counts = work(job) or {}
            self.handle.reload()
        except JobCancelled:
            job.error = "cancelled (what was committed stays; run it again to resume)"
        except DgragError as exc:
            job.error = str(exc)
        finally:
            job.done = True
            self.write_lock.release()
        return job

    def cancel_job(self, secret: str | None = None) -> str:
        """Ask the running job to stop at its next step (what it committed stays); needs the
        admin secret like every other write."""
        self.check_admin(secret)
        job = self.job
        if job is None or job.done:
            return "no job is running"
        job.cancel.set()
        return f"cancelling {job.name}"

    def index_docs(self, docs: Path, url_template: str = "", secret: str | None = None) -> Job:
        docs = Path(docs)
        if not docs.is_dir():
            raise DgragError(f"not a folder on the server: {docs}")
        return self.run_job("index", lambda job: self._index(docs, job.on_progress, url_template).as_dict(), secret)

    def enrich(self, step: str, secret: str | None = None) -> Job:
        def work(job: Job) -> dict:
            from .backends.embedders import embedder_for_store
            from .backends.llm import LLM
            from .enrich import semantic_layer
            from .enrich.runner import StoreCache, run_step
            from .store import Store

            with Store(self.settings.db_path) as store:
                embedder = embedder_for_store(self.settings, store)
                llm = LLM.from_settings(self.settings, StoreCache(store)) \
                    if self.settings.llm_base_url and self.settings.llm_model else None
                out = {}
                if step != "synonymy":
                    rep = run_step(store, self.settings, step, llm, progress=job.on_progress, cancel=job.cancel)
                    out = {k: getattr(rep, k) for k in ("total", "done", "cached", "offline", "failed")}
                out["semantic_layer"] = semantic_layer.finalize(store, self.settings, embedder, job.on_progress)
                return out

        return self.run_job(step, work, secret)

    def snapshot(self, dest_dir: Path | None = None) -> Path:
        """A consistent single-file copy of the index (VACUUM INTO), taken while serving."""
        from .retrieve.loaded import ensure_graph_cache
        from .store import Store

        dest_dir = Path(dest_dir or tempfile.mkdtemp(prefix="dgrag-snapshot-"))
        dest = dest_dir / f"{Path(self.settings.db_path).stem}-{time.strftime('%Y%m%d-%H%M%S')}.db"
        ensure_graph_cache(self.settings.db_path)  # the copy starts without building anything
        with Store(self.settings.db_path, readonly=True) as st:
            st.copy_to(dest)
        return dest

    def open_index(self, uploaded: Path, secret: str | None = None) -> dict:
        """Validate a teammate's index file, then make it the served one (the old file is kept)."""
        from .backends.embedders import make_embedder, resolve_embedder
        from .store import Store

        self.check_admin(secret)
        uploaded = Path(uploaded)
        with Store(uploaded, readonly=True) as st:
            if st.con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise IndexFileError("the uploaded file fails SQLite's integrity check")
            # the file decides the model (a server started with an explicit other one refuses it);
            # it must be one this server can load, at the recorded dimension
            emb = make_embedder(resolve_embedder(self.settings, st.meta.items(), "the uploaded file"), role="query")
            st.check_embedder(emb.model_id, emb.dim)
            stats = st.stats()
        target = Path(self.settings.db_path)
        with self.write_lock:
            staged = target.with_suffix(".incoming.db")
            shutil.copyfile(uploaded, staged)
            if target.exists():
                shutil.copyfile(target, target.with_suffix(".previous.db"))
            os.replace(staged, target)
            for extra in (Path(f"{target}-wal"), Path(f"{target}-shm")):
                extra.unlink(missing_ok=True)
            self.handle.reload()
        return stats


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
