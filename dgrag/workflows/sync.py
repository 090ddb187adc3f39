"""Freshness: a docs repository's newest commit into the index (`dgrag sync`, the schedule of
`dgrag serve`).

A sync checks the commit out in the cache (workflows/git.py), then runs the incremental index on
its docs folder: unchanged pages cost a hash check, changed ones are diffed node by node, and a
page that is gone (deleted, or renamed: gone under its old name) is deleted with its nodes,
edges, vectors and facts. Where the file has a semantic layer, the changed pages get theirs too.
Then the file records the commit it holds (store/meta.py `record_source`): /health and every
answer name it. Questions keep being answered meanwhile: each page is its own transaction (WAL),
and the app swaps its loaded snapshot only once the sync has committed.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..config import Settings
from ..embed import Progress
from ..errors import DgragError, SyncError
from ..ingest.pipeline import IndexReport, site_pages
from ..ingest.site import detect_site
from ..store import Store
from .git import Checkout, checkout, clone_folder, clone_lock, normalise_repo
from .indexing import docs_settings, index_docs, offline_layer


@dataclass
class SyncReport:
    checkout: Checkout
    docs: Path
    index: IndexReport
    previous: str = ""  # the commit the index held before ("" when none was synced into it)
    semantic_layer: dict = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"source": self.checkout.as_dict(), "previous": self.previous, "docs": str(self.docs),
                "index": self.index.as_dict(), "semantic_layer": self.semantic_layer,
                "seconds": round(self.seconds, 2), "line": self.line()}

    def line(self) -> str:
        """One line: the commit now held and what changed to get there."""
        c, r = self.checkout, self.index
        moved = ("the index's already" if self.previous == c.commit else
                 f"the index had {self.previous[:10]}" if self.previous else "first sync into the index")
        return (f"synced {c.repo} {c.branch} at {c.commit[:10]} ({c.commit_time}, {moved}): "
                f"{r.files_indexed} pages indexed, {r.files_unchanged} unchanged, {r.files_deleted} removed "
                f"of {r.files_seen}; {r.embedded} texts embedded in {self.seconds:.1f} s")


def docs_folder(work_tree: Path, docs: str) -> Path:
    """The docs folder inside a checkout; one that leads outside it (`..`, a symlink) is refused."""
    folder = (work_tree / (docs or "").strip("/")).resolve()
    if not folder.is_relative_to(work_tree.resolve()):
        raise SyncError(f"the docs folder {docs!r} leads outside the repository")
    if not folder.is_dir():
        raise SyncError(f"the repository has no folder {docs!r} at this commit")
    return folder


def count_pages(settings: Settings, docs: Path) -> int:
    """The pages `dgrag index` would read under `docs` (its site's, as detected); more than
    `max_pages` is refused before any is read."""
    site = detect_site(docs, settings.site, settings.site_url)
    pages, _ = site_pages(docs, site, settings.include)
    if len(pages) > settings.max_pages:
        raise DgragError(f"{docs} has {len(pages)} pages, more than max_pages ({settings.max_pages}); "
                         "index a sub-folder (--docs) or raise DGRAG_MAX_PAGES")
    return len(pages)


def sync(settings: Settings, repo: str, *, branch: str = "", docs: str = "",
         progress: Progress | None = None) -> SyncReport:
    """Bring `settings.db_path` in line with the newest commit of `repo`'s `branch`: clone or
    fetch, check out, index the docs folder incrementally, record the commit."""
    t0 = time.perf_counter()
    repo = normalise_repo(repo)
    with clone_lock(clone_folder(settings, repo)):  # its files stay at this commit until indexed
        co = checkout(settings, repo, branch)
        folder = docs_folder(co.path, docs)
        count_pages(settings, folder)
        s = docs_settings(settings, folder, settings.url_template, settings.include)
        if not s.include_root:  # includes (snippets, code files) may come from anywhere in the repository
            s = dataclasses.replace(s, include_root=str(co.path))
        with Store(s.db_path) as store:
            previous = store.meta.docs_version()["commit"] or ""
            report, layer = refresh_index(s, store, progress)
            with store.transaction():
                store.meta.record_source({"repo": co.repo, "branch": co.branch, "commit": co.commit,
                                          "commit_time": co.commit_time})
    return SyncReport(co, folder, report, previous, layer, time.perf_counter() - t0)


def refresh_index(settings: Settings, store: Store, progress: Progress | None = None) -> tuple[IndexReport, dict]:
    """The incremental index of `settings.docs_root`; where the file has a semantic layer (facts),
    the offline layer for the pages that changed. Returns the index report and the layer's."""
    layered = store.semantic.counts().get("facts", 0) > 0  # read before: a new file has none
    report = index_docs(settings, store, progress=progress)
    layer = {}
    if layered and (report.files_indexed or report.files_deleted):
        layer = offline_layer(settings, store, progress=progress).get("semantic_layer", {})
    return report, layer


class Schedule:
    """Runs `job` now and then every `every_s` seconds in a daemon thread, until `stop()`. A run
    that fails is one line on stderr; the next run tries again."""

    def __init__(self, every_s: float, job: Callable[[], str], name: str = "dgrag-sync", first_after: float = 0.0):
        if every_s <= 0:
            raise DgragError("a schedule needs a period above 0 seconds")
        self.every_s = every_s
        self.first_after = first_after  # seconds before the first run
        self.job = job
        self.name = name
        self.runs = 0
        self.last = ""  # the last run's line (its error, when it failed)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Schedule":
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        self._stop.wait(self.first_after)
        while not self._stop.is_set():
            try:
                self.last = self.job()
            except DgragError as exc:
                self.last = f"sync failed: {exc}"
            self.runs += 1
            print(f"{self.name}: {self.last}", file=sys.stderr, flush=True)
            self._stop.wait(self.every_s)

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
