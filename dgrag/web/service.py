"""What the app and the REST API share over one index file: the `Service` the web layer calls.

It is made of three parts, each in its own module:
- `IndexKeeper` (index_keeper.py): the loaded snapshot, the one writer and its jobs (index,
  sync, enrich, snapshot, open a file), the admin guard;
- `Builds` (builds.py): the first start's batched build (or a shipped index brought up to
  date), a folder indexed from the Index tab, its banner and readiness;
- `Answering` (answering.py): a request checked once, the retriever, the answer's events.

The names below say which part answers each; `health` is the one thing that asks all three.
"""
from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..errors import DgragError
from .answering import Answering
from .builds import Builds
from .index_keeper import IndexKeeper


class _Part:
    """A name of the Service that is one part's own: read, called (and set) on that part."""

    def __init__(self, part: str):
        self.part = part

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, service, owner=None):
        return self if service is None else getattr(getattr(service, self.part), self.name)

    def __set__(self, service, value) -> None:
        setattr(getattr(service, self.part), self.name, value)


class Service:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.index = IndexKeeper(settings)
        self.builds = Builds(settings, self.index)
        self.answers = Answering(settings, self.index, self.builds.ready)

    # the index file: its snapshot, its one writer, the admin guard (index_keeper.py)
    handle = _Part("index")
    writer = _Part("index")
    job = _Part("index")
    write_lock = _Part("index")
    check_admin = _Part("index")
    read_only = _Part("index")
    docs_version = _Part("index")
    description = _Part("index")
    stats = _Part("index")
    run_job = _Part("index")
    cancel_job = _Part("index")
    sync = _Part("index")
    scheduled_sync = _Part("index")
    enrich = _Part("index")
    snapshot = _Part("index")
    open_index = _Part("index")
    log = _Part("index")

    # the batched builds: the first start's, a folder from the Index tab (builds.py)
    build = _Part("builds")
    first_start = _Part("builds")
    shipped_note = _Part("builds")
    demo_build = _Part("builds")
    start_demo_build = _Part("builds")
    install_shipped = _Part("builds")
    ensure_index = _Part("builds")
    index_docs = _Part("builds")
    build_banner = _Part("builds")
    ready = _Part("builds")

    # the answers (answering.py)
    retriever = _Part("answers")
    check_request = _Part("answers")
    admit = _Part("answers")
    retrieve = _Part("answers")
    answerer = _Part("answers")
    chat_events = _Part("answers")
    chat = _Part("answers")

    def health(self) -> dict:
        loaded = self.handle.loaded
        s = self.settings
        build = self.builds.build
        out = {"status": "ok", "index_path": str(s.db_path),
               "index_exists": Path(s.db_path).exists(), "hipporag_initialized": loaded is not None,
               "index_loaded": loaded is not None, "read_only": self.read_only,
               "rerank_backend": s.rerank_backend, "llm_configured": s.llm_configured,
               "job": None if self.job is None else {"name": self.job.name, "done": self.job.done},
               "build": None if build is None else build.status().as_dict(),
               "question_log": self.log.describe(),
               "limits": {"max_query_chars": s.max_query_chars, "max_query_tokens": s.max_query_tokens,
                          "max_body_bytes": s.max_body_bytes, "request_timeout_s": s.request_timeout_s}}
        if out["index_exists"]:
            try:
                out["index"] = self.description()
                out["embedding_model"] = out["embedder"] = out["index"]["embedding_model"]
            except DgragError as exc:
                out.update(status="degraded", index_error=str(exc))
        if loaded is not None:
            out.update(nodes=int(loaded.n_nodes), edges=int(loaded.n_edges), facts=int(loaded.fact_rowids.size),
                       load_seconds=round(loaded.load_seconds, 3))
        out["docs_version"] = self.docs_version()
        return out
