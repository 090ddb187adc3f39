"""The background job: one writer at a time, progress, cancel, and the reload that follows.

An index file has one writer (SQLite WAL); readers keep answering from the loaded snapshot, and
the writer's `after` hook (the app's reload) swaps in the new one once the job has committed.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import DgragError


class JobCancelled(DgragError):
    """An indexing job was cancelled; what it committed stays, a rerun resumes."""


@dataclass
class Job:
    name: str
    log: list[str] = field(default_factory=list)
    progress: dict[str, tuple[int, int]] = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    done: bool = False
    error: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.time)

    def on_progress(self, stage: str, done: int, total: int) -> None:
        """The progress callback every workflow takes; it is also where a cancel lands."""
        if self.cancel.is_set():
            raise JobCancelled(self.name)
        self.progress[stage] = (done, total)


class Writer:
    """Runs jobs as the one writer of an index file. `busy` names the job that holds it."""

    def __init__(self, after: Callable[[], None] | None = None):
        self.lock = threading.Lock()
        self.job: Job | None = None
        self.after = after or (lambda: None)

    def run(self, name: str, work: Callable[[Job], dict | None], *, wait: bool = False) -> Job:
        """Run `work(job)` now, in the calling thread. Another job running is an error (or,
        with `wait`, waited for). A typed error or a cancel ends the job with `job.error` set;
        what it committed stays."""
        if not self.lock.acquire(blocking=wait):
            raise DgragError(f"another indexing job is running ({self.job.name if self.job else '?'})")
        job = self.job = Job(name)
        try:
            job.counts = work(job) or {}
            self.after()
        except JobCancelled:
            job.error = "cancelled (what was committed stays; run it again to resume)"
        except DgragError as exc:
            job.error = str(exc)
        finally:
            job.done = True
            self.lock.release()
        return job

    def cancel(self) -> str:
        job = self.job
        if job is None or job.done:
            return "no job is running"
        job.cancel.set()
        return f"cancelling {job.name}"
