"""`dgrag serve`: the app (Gradio UI + REST API on one port), as `python app.py` runs it."""
from __future__ import annotations

from ..errors import DgragError
from .common import settings_for


def cmd_serve(args) -> int:
    settings = settings_for(args)
    if not settings.db_path.exists() and not args.build_demo:
        raise DgragError(f"no index file at {settings.db_path}; build one with `dgrag index DOCS --db "
                         f"{settings.db_path}`, or add --build-demo to build the demo index there")
    from ..server import build_app, serve

    serve(build_app(settings), settings.server_host, settings.server_port, build_demo_index=args.build_demo)
    return 0
