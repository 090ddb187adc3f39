"""Cutting a streamed LLM answer the moment its cancel is set.

A stream's reader finds its cancel only when a piece arrives: while the model is silent it is
blocked in a socket read that no flag reaches, and the model goes on generating (and billing)
for nobody. `cut_on_cancel` registers the stream with one watcher thread that looks at every
registered cancel every `POLL_S`; when one is set it shuts the stream's socket down (a
shutdown, not a close: it wakes the blocked read and sends the server a FIN), so the model's
server sees the request end within a poll.
"""
from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any, Iterator

POLL_S = 0.05


class _Watcher:
    def __init__(self):
        self._lock = threading.Lock()
        self._streams: dict[int, tuple[threading.Event, Any]] = {}
        self._thread: threading.Thread | None = None
        self._next = 0

    def add(self, cancel: threading.Event, stream: Any) -> int:
        with self._lock:
            self._next += 1
            self._streams[self._next] = (cancel, stream)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="dgrag-llm-aborts", daemon=True)
                self._thread.start()
            return self._next

    def remove(self, key: int) -> None:
        with self._lock:
            self._streams.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._streams:  # nothing to watch: the thread ends; the next add starts one
                    self._thread = None
                    return
                due = [k for k, (cancel, _) in self._streams.items() if cancel.is_set()]
                cut = [self._streams.pop(k)[1] for k in due]
            for stream in cut:
                shut_down(stream)
            threading.Event().wait(POLL_S)


_WATCHER = _Watcher()


def socket_of(stream: Any) -> socket.socket | None:
    """The socket under an `openai` Stream (its httpx response's network stream), if it has one."""
    response = getattr(stream, "response", None)
    network = (getattr(response, "extensions", None) or {}).get("network_stream")
    get = getattr(network, "get_extra_info", None)
    sock = get("socket") if get is not None else None
    return sock if isinstance(sock, socket.socket) else None


def shut_down(stream: Any) -> None:
    sock = socket_of(stream)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


@contextlib.contextmanager
def cut_on_cancel(cancel: threading.Event | None, stream: Any) -> Iterator[None]:
    """While inside, a set `cancel` shuts `stream`'s socket down (see the module's docstring)."""
    if cancel is None:
        yield
        return
    key = _WATCHER.add(cancel, stream)
    try:
        yield
    finally:
        _WATCHER.remove(key)
