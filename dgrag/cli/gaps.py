"""`dgrag gaps`: the gap report from the question log in the index file (workflows/gaps.py)."""
from __future__ import annotations

import contextlib
import sys

from .common import require_index, settings_for


def cmd_gaps(args) -> int:
    from ..backends.embedder_choice import embedder_for_store
    from ..store import Store
    from ..workflows.gaps import gap_report, since_date
    from ..workflows.gaps_render import render

    settings = settings_for(args)
    since = since_date(args.since or "")
    from ..web.asklog import log_path

    side, _ = log_path(settings)  # the question log where it is not the index file (log_db, a side file)
    side = side if side is not None and side != settings.db_path and side.exists() else None
    with Store(require_index(settings.db_path), readonly=True) as store, \
            (Store(side, readonly=True) if side is not None else contextlib.nullcontext()) as log:  # writes nothing
        if args.translations:
            from ..answer.translations import translation_gaps
            from ..workflows.gaps import GapReport

            report = GapReport(since, "", 0, 0, 0, 0, translations=translation_gaps(store))
        else:
            embedder = embedder_for_store(settings, store)  # the batch engine: a log is many questions
            report = gap_report(store, embedder, since, log=log)
        text = render(report, args.format, translations_only=args.translations)
    sys.stdout.write(text)
    return 0
