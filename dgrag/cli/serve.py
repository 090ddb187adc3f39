"""`dgrag serve`: the app (Gradio UI + REST API on one port), as `python app.py` runs it."""
from __future__ import annotations

import os

from .common import settings_for


def cmd_serve(args) -> int:
    from ..web.server import build_app, refuse_missing_index, serve

    dbs = list(args.db or [])  # --db more than once: the first is the default, the rest are served beside it
    args.db = dbs[0] if dbs else None
    settings = settings_for(args, more_db_paths=os.pathsep.join(dbs[1:]) or None)
    refuse_missing_index(settings, args.build_demo)  # before gradio loads: a refusal costs no time
    serve(build_app(settings), settings.server_host, settings.server_port, build_demo_index=args.build_demo)
    return 0
