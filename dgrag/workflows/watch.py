"""`dgrag watch`: re-index a docs folder once its files stop changing.

The folder is polled (every `watch_poll_s`): each file's size and modification time, no
notification library. A change starts the quiet period (`watch_quiet_s`); a run of edits (an
editor's save, a `git pull`) is indexed once, after the last of them. The re-index is the
incremental one: only the pages that changed are parsed and embedded, removed ones are deleted.
A change made while it runs is seen by the next poll and indexed after its own quiet period; a
re-index that fails (the folder gone, the file busy) is reported, and tried again at the next
change. Polling is bounded: a folder with more than `max_pages` pages (or ten times as many
files) is refused.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..config import Settings
from ..errors import DgragError
from ..ingest.pipeline import IndexReport
from ..store import Store
from .indexing import docs_settings
from .sync import count_pages, refresh_index

Tree = dict[str, tuple[int, int]]  # path -> (mtime_ns, size)


@dataclass
class WatchRun:
    number: int  # 1 for the run at start, which brings the index in line with the folder
    changed: int  # files that changed since the run before (added, edited or removed)
    report: IndexReport
    seconds: float

    def line(self) -> str:
        r = self.report
        when = time.strftime("%H:%M:%S")
        why = "at start" if self.number == 1 else f"{self.changed} files changed"
        return (f"{when} re-indexed ({why}): {r.files_indexed} pages indexed, {r.files_deleted} removed, "
                f"{r.files_unchanged} unchanged of {r.files_seen}; {r.embedded} texts embedded in {self.seconds:.1f} s")


def scan(root: Path, max_files: int) -> Tree:
    """Every file under `root` (hidden folders left out, as the indexer does) with its time and
    size; more than `max_files` is refused."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:  # removed between the listing and the stat: the next poll sees it gone
                continue
            out[os.path.relpath(full, root)] = (st.st_mtime_ns, st.st_size)
            if len(out) > max_files:
                raise DgragError(f"{root} holds more than {max_files} files (ten times max_pages); "
                                 "watch a smaller folder or raise DGRAG_MAX_PAGES")
    return out


def changes(before: Tree, after: Tree) -> int:
    """Files added, removed or changed (size or time) between two scans."""
    return len(before.keys() ^ after.keys()) + sum(1 for k in before.keys() & after.keys() if before[k] != after[k])


class Watcher:
    """Polls one docs folder and re-indexes it into the settings' index file."""

    def __init__(self, settings: Settings, docs: Path, on_run: Callable[[WatchRun], None] | None = None,
                 on_error: Callable[[str], None] | None = None):
        docs = Path(docs)
        if not docs.is_dir():
            raise DgragError(f"no docs folder at {docs}")
        if settings.watch_quiet_s < 0 or settings.watch_poll_s <= 0:
            raise DgragError("watch_quiet_s must be >= 0 and watch_poll_s above 0")
        self.settings = docs_settings(settings, docs, settings.url_template, settings.include)
        self.root = docs
        self.on_run = on_run or (lambda run: None)
        self.on_error = on_error or (lambda line: None)
        self.runs = 0
        self.indexed: Tree = {}  # the folder as the last run read it
        self.stop = threading.Event()

    def index_now(self, changed: int = 0) -> WatchRun:
        """Re-index now; the folder's state read just before is what the next change compares with."""
        count_pages(self.settings, self.root)  # more than max_pages is refused, every time
        tree = scan(self.root, 10 * self.settings.max_pages)
        t0 = time.perf_counter()
        with Store(self.settings.db_path) as store:
            report, _ = refresh_index(self.settings, store)
        self.indexed = tree
        self.runs += 1
        run = WatchRun(self.runs, changed, report, time.perf_counter() - t0)
        self.on_run(run)
        return run

    def run(self, max_runs: int | None = None) -> int:
        """Index at start (a failure there is raised), then after each quiet period that follows
        a change, until `stop` is set (or `max_runs` runs). A later run that fails is reported
        through `on_error` and tried again at the next change. Returns the runs made."""
        self.index_now()
        seen, changed_at = self.indexed, None
        while not self.stop.is_set() and (max_runs is None or self.runs < max_runs):
            self.stop.wait(min(self.settings.watch_poll_s, self.settings.watch_quiet_s or self.settings.watch_poll_s))
            try:
                now = scan(self.root, 10 * self.settings.max_pages)
                if now != seen:  # still changing: the quiet period starts again
                    seen, changed_at = now, time.monotonic()
                elif changed_at is not None and time.monotonic() - changed_at >= self.settings.watch_quiet_s:
                    changed_at = None
                    self.index_now(changes(self.indexed, now))
                    seen = self.indexed  # a change made while it ran differs from this
            except (DgragError, OSError, sqlite3.Error) as exc:  # the folder gone, the file busy, too many pages
                self.on_error(f"{time.strftime('%H:%M:%S')} re-index failed: {exc} (tried again at the next change)")
        return self.runs
