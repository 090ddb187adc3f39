"""Commands that keep an index fresh: sync (a git repository's newest commit) and watch (a docs
folder, re-indexed after each quiet period)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import DgragError
from .common import ProgressBar, settings_for


def cmd_sync(args) -> int:
    from ..workflows.sync import sync

    settings = settings_for(args)
    repo = args.repo or settings.sync_repo
    if not repo:
        raise DgragError("which repository? give it as `dgrag sync REPO` or set DGRAG_SYNC_REPO")
    bar = ProgressBar(not args.quiet)
    try:
        report = sync(settings, repo, branch=settings.sync_branch, docs=settings.sync_docs, progress=bar)
    finally:
        bar.close()
    if args.json:
        print(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    else:
        print(report.line())
        for path, why in report.index.skipped:
            print(f"  skipped {path}: {why}")
    return 0


def cmd_watch(args) -> int:
    from ..workflows.watch import Watcher

    settings = settings_for(args)
    if settings.docs_root is None:
        raise DgragError("which docs folder? give it as `dgrag watch DOCS` or set DGRAG_DOCS_ROOT")
    docs = Path(settings.docs_root)
    watcher = Watcher(settings, docs, on_run=lambda run: print(run.line(), flush=True),
                      on_error=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"watching {docs} into {settings.db_path}: re-indexed {settings.watch_quiet_s:g} s after the last "
          "change (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        watcher.run(max_runs=args.max_runs)
    except KeyboardInterrupt:  # the way to stop watching: what each run committed stays
        print("stopped watching", file=sys.stderr)
    return 0
