"""An answer written in a thread of its own, so that whoever shows it can stop it at once.

`dgrag chat` (Ctrl-C) and the app's chat (Stop) read the answer's events through `Running`.
The events come from a worker thread; the reader only ever waits on a queue, in short waits,
and never runs a model call itself:

* Ctrl-C: Python raises KeyboardInterrupt in the main thread, between two bytecodes; the main
  thread here is in a 50 ms wait, so it raises at once, whatever the answer is doing (a read
  from a silent model, a retry's back-off, a search).
* Stop: Gradio closes the handler's generator only between two of its values; `events(idle_s=)`
  yields None while the model is silent, so the handler can yield and be closed.

`cancel()` returns at once. It sets the event the answer was started with, and the answer
stops at its next step (a model call raises `Cancelled` before a request, in a back-off, or
when a reply or a streamed piece arrives, and a stream the model holds silent is shut down at
once: `backends.aborts`); a request the model has not answered at all yet is left to end in its
worker thread, whose events are dropped and which then exits. It is a daemon
thread, so it never keeps the process alive.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator

from ..errors import Cancelled

POLL_S = 0.05  # the reader's longest wait without looking at the clock (and at Ctrl-C)
_END = object()


class Running:
    """`start(cancel)` -> the answer's events, iterated in a daemon thread."""

    def __init__(self, start: Callable[[threading.Event], Iterator[dict]], name: str = "dgrag-answer"):
        self.cancelled = threading.Event()
        self.finished = threading.Event()  # set when the worker has left the answer
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, args=(start,), name=name, daemon=True)
        self._thread.start()

    def _work(self, start: Callable[[threading.Event], Iterator[dict]]) -> None:
        events = None
        try:
            events = start(self.cancelled)
            for ev in events:
                if self.cancelled.is_set():
                    break
                self._queue.put(("event", ev))
        except Cancelled:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._queue.put(("error", exc))
        finally:
            try:
                if events is not None and hasattr(events, "close"):
                    events.close()
            except Exception:  # noqa: BLE001 - the answer is over either way
                pass
            self._queue.put(("end", _END))
            self.finished.set()

    def events(self, idle_s: float | None = None) -> Iterator[dict | None]:
        """The answer's events as they come; with `idle_s`, None after each idle_s without one.
        An error the answer raised is raised here; after `cancel()`, the events stop."""
        last = time.monotonic()
        while not self.cancelled.is_set():
            try:
                kind, value = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                if idle_s is not None and time.monotonic() - last >= idle_s:
                    last = time.monotonic()
                    yield None
                continue
            if kind == "end":
                return
            if kind == "error":
                raise value
            last = time.monotonic()
            yield value

    def __iter__(self) -> Iterator[dict]:
        return (ev for ev in self.events() if ev is not None)

    def cancel(self) -> None:
        """Stop the answer; returns at once (see the module's docstring)."""
        self.cancelled.set()
