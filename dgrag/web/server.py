"""The app: the Gradio UI and the REST API on one server. `dgrag serve` and `python app.py`
(the Spaces entry point, a thin shim over this module) run the same thing.

`build_app` makes the services (one per index file), the Gradio Blocks and the FastAPI app
(with /chat, /retrieve, /health, /chat/stream, /feedback, /widget.js, /images/{sha}, the MCP tools
at /mcp, the OpenAI-compatible /v1 routes, and the UI mounted at /) with no other side effect; `serve` starts
the sync schedule if one is set, builds the demo index if asked and absent, loads the indexes,
then runs uvicorn.
"""
from __future__ import annotations

import os
import sys
import time
from typing import NamedTuple

from ..config import Settings


class App(NamedTuple):
    service: object  # dgrag.web.service.Service: the default index's
    demo: object  # gradio.Blocks
    app: object  # fastapi.FastAPI, the UI mounted at /
    indexes: object = None  # dgrag.web.indexes.Indexes: every index file served, by name


def build_app(settings: Settings | None = None) -> App:
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gradio as gr

    from .api import build_api
    from .indexes import Indexes
    from .ui import build_demo

    indexes = Indexes.from_settings(settings if settings is not None else Settings.from_env())
    demo = build_demo(indexes)
    return App(indexes.service, demo, gr.mount_gradio_app(build_api(indexes), demo, path="/"), indexes)


def serve(built: App, host: str | None = None, port: int | None = None, build_demo_index: bool = True) -> None:
    """Serve at once. When the index file is absent (and building the demo is allowed), or a
    demo build of it did not finish, the build runs in the background, batch after batch, and
    questions are answered from each batch as it commits; otherwise the index is loaded first."""
    service = built.service
    settings = service.settings
    host = host or settings.server_host
    port = port or settings.server_port
    refuse_missing_index(settings, build_demo_index)
    start_sync(service)  # before the demo build: a file the first sync wrote is not the demo's to build
    build = service.start_demo_build() if build_demo_index else None
    if service.shipped_note:  # a prebuilt index shipped with the app: taken, or refused and why
        print(service.shipped_note, file=sys.stderr, flush=True)
    if build is not None:
        st = build.status()
        print(f"building the demo index {settings.db_path} in the background: {st.pages_total} pages in "
              f"{st.batches_total} batches, {st.batches_done} done before (a restart resumes)",
              file=sys.stderr, flush=True)
    for name, svc in built.indexes or [("", service)]:
        if svc.settings.db_path.exists():
            li = svc.handle.get()
            print(f"index {name} loaded: {li.n_nodes} nodes, {li.n_edges} edges in {li.load_seconds:.2f} s",
                  file=sys.stderr)
            svc.retriever  # noqa: B018 - load the embedder and compile the kernels now, not at the first question
    service.retriever  # noqa: B018
    for name, svc in built.indexes or [("", service)]:
        svc.log.start()  # the question log's retention period: pruned now, then daily
        log = svc.log.describe()
        where = f"logged to {log['file']}" if log["log_questions"] and log["file"] else "not logged"
        print(f"index {name}: questions {where} ({log['where']}; feedback stored there)", file=sys.stderr)
    print(f"serving on http://{host}:{port}/", file=sys.stderr, flush=True)
    # on SIGTERM, requests in flight get shutdown_timeout_s, then the server exits
    run_server(built.app, host, port, settings)


def syncs(settings: Settings) -> bool:
    """Is a sync schedule set (`sync_repo` and `sync_every`)?"""
    return bool(settings.sync_repo.strip()) and settings.sync_every > 0


def start_sync(service):
    """The sync schedule of the default index (`sync_repo` every `sync_every` seconds), or None.
    With no index file yet, the first sync runs before the server answers (nothing to answer
    from before it); otherwise at once, in the background, like every later one."""
    from ..workflows.sync import Schedule

    settings = service.settings
    if not syncs(settings):
        return None
    first_after = 0.0
    if not settings.db_path.exists():
        print(f"syncing {settings.sync_repo} into {settings.db_path} first (no index file yet)",
              file=sys.stderr, flush=True)
        print(service.scheduled_sync(), file=sys.stderr, flush=True)  # a failure stops the start: nothing to serve
        first_after = settings.sync_every
    return Schedule(settings.sync_every, service.scheduled_sync, first_after=first_after).start()


def refuse_missing_index(settings: Settings, build_demo_index: bool) -> None:
    """An absent index file is refused (DgragError) unless the demo index may be built there, or
    a sync schedule fills it (the first file only: the others are served as they are)."""
    from ..errors import DgragError
    from .indexes import index_files

    for i, path in enumerate(index_files(settings)):
        if not path.exists() and not ((build_demo_index or syncs(settings)) and i == 0):
            raise DgragError(f"no index file at {path}; build one with `dgrag index DOCS --db {path}`"
                             + (", or add --build-demo to build the demo index there" if i == 0 else ""))


def run_server(app, host: str, port: int, settings) -> None:
    """uvicorn until SIGTERM / SIGINT, then a prompt exit: requests still running get
    shutdown_timeout_s, then are dropped. Work left in worker threads (an LLM call, an indexing
    job) does not keep the process alive: what it committed is in the file, the rest is rolled
    back by SQLite, and a rerun resumes."""
    import math
    import threading

    import uvicorn

    grace = max(1, math.ceil(settings.shutdown_timeout_s))
    from .connections import uvicorn_config

    # slow or greedy clients are bounded: header and body deadlines, connection caps, keep-alive
    server = uvicorn.Server(uvicorn_config(app, host, port, settings, timeout_graceful_shutdown=grace))
    server.run()
    deadline = time.monotonic() + 1.0
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
