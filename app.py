"""dgrag app: the Gradio UI and the REST API on one server (the Hugging Face Spaces entry point).

A thin shim over `dgrag.web.server`, which `dgrag serve` runs too. `demo` (the Gradio Blocks) and
`app` (FastAPI with /chat, /retrieve, /health, /chat/stream, /feedback, /widget.js, /images/{sha}, the
MCP tools at /mcp, the OpenAI-compatible /v1, and the UI mounted at /) are built at import, with no
other side effect: the index is built (if absent) and loaded when the server starts. Questions asked
and their answers are logged (DGRAG_LOG_QUESTIONS, 90 days by default: DGRAG_LOG_RETENTION_DAYS).
Run: python app.py [--host 0.0.0.0] [--port 7860]   (DGRAG_DB_PATH names the index file or a folder
of them; DGRAG_MORE_DB_PATHS adds more)
"""
from __future__ import annotations

import argparse

from dgrag.config import Settings
from dgrag.web.server import build_app, serve

_built = build_app(Settings.from_env())
service, demo, app = _built.service, _built.demo, _built.app


def main(argv: list[str] | None = None) -> None:
    settings = service.settings
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default=settings.server_host,
                    help="address to listen on (env DGRAG_SERVER_HOST, else GRADIO_SERVER_NAME)")
    ap.add_argument("--port", type=int, default=settings.server_port,
                    help="port (env DGRAG_SERVER_PORT, else GRADIO_SERVER_PORT or PORT)")
    args = ap.parse_args(argv)
    serve(_built, args.host, args.port)


if __name__ == "__main__":
    main()
