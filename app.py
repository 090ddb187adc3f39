"""dgrag app: the Gradio UI and the REST API on one server.

`demo` (the Gradio Blocks) and `app` (FastAPI with /chat, /retrieve, /health, /chat/stream,
/images/{sha}, and the UI mounted at /) are built at import, with no other side effect:
the index is built (if absent) and loaded when the server starts.
Run: python app.py [--host 0.0.0.0] [--port 7860]
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402

from dgrag.api import build_api  # noqa: E402
from dgrag.config import Settings  # noqa: E402
from dgrag.service import Service  # noqa: E402
from dgrag.ui import build_demo  # noqa: E402

service = Service(Settings.from_env())
demo = build_demo(service)
app = gr.mount_gradio_app(build_api(service), demo, path="/")


def _print_progress(stage: str, done: int, total: int) -> None:
    if done == total or done % 200 == 0:
        print(f"  {stage}: {done}/{total}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", 7860))))
    args = ap.parse_args(argv)
    if not service.settings.db_path.exists():
        print(f"building the demo index {service.settings.db_path} (first start) ...", file=sys.stderr, flush=True)
    service.ensure_index(_print_progress)
    li = service.handle.get()
    print(f"index loaded: {li.n_nodes} nodes, {li.n_edges} edges in {li.load_seconds:.2f} s", file=sys.stderr)
    service.retriever  # noqa: B018 - load the embedder and compile the kernels now, not at the first question
    print(f"serving on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
