"""The app: the Gradio UI and the REST API on one server. `dgrag serve` and `python app.py`
(the Spaces entry point, a thin shim over this module) run the same thing.

`build_app` makes the service, the Gradio Blocks and the FastAPI app (with /chat, /retrieve,
/health, /chat/stream, /images/{sha}, and the UI mounted at /) with no other side effect;
`serve` builds the demo index if asked and absent, loads the index, then runs uvicorn.
"""
from __future__ import annotations

import os
import sys
from typing import NamedTuple

from ..config import Settings


class App(NamedTuple):
    service: object  # dgrag.web.service.Service
    demo: object  # gradio.Blocks
    app: object  # fastapi.FastAPI, the UI mounted at /


def build_app(settings: Settings | None = None) -> App:
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gradio as gr

    from .api import build_api
    from .service import Service
    from .ui import build_demo

    service = Service(settings if settings is not None else Settings.from_env())
    demo = build_demo(service)
    return App(service, demo, gr.mount_gradio_app(build_api(service), demo, path="/"))


def serve(built: App, host: str | None = None, port: int | None = None, build_demo_index: bool = True) -> None:
    """Serve at once. When the index file is absent (and building the demo is allowed), or a
    demo build of it did not finish, the build runs in the background, batch after batch, and
    questions are answered from each batch as it commits; otherwise the index is loaded first."""
    service = built.service
    settings = service.settings
    host = host or settings.server_host
    port = port or settings.server_port
    refuse_missing_index(settings, build_demo_index)
    build = service.start_demo_build() if build_demo_index else None
    if build is not None:
        st = build.status()
        print(f"building the demo index {settings.db_path} in the background: {st.pages_total} pages in "
              f"{st.batches_total} batches, {st.batches_done} done before (a restart resumes)",
              file=sys.stderr, flush=True)
    if settings.db_path.exists():
        li = service.handle.get()
        print(f"index loaded: {li.n_nodes} nodes, {li.n_edges} edges in {li.load_seconds:.2f} s", file=sys.stderr)
    service.retriever  # noqa: B018 - load the embedder and compile the kernels now, not at the first question
    print(f"serving on http://{host}:{port}/", file=sys.stderr, flush=True)
    # on SIGTERM, requests in flight get shutdown_timeout_s, then the server exits
    from .api import run_server

    run_server(built.app, host, port, settings)


def refuse_missing_index(settings: Settings, build_demo_index: bool) -> None:
    """An absent index file is refused (DgragError) unless the demo index may be built there."""
    if not build_demo_index and not settings.db_path.exists():
        from ..errors import DgragError

        raise DgragError(f"no index file at {settings.db_path}; build one with `dgrag index DOCS --db "
                         f"{settings.db_path}`, or add --build-demo to build the demo index there")

