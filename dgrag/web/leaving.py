"""Work that stops when the client leaves, as Stop stops it in the UI.

An answer (retrieval rounds, the LLM request) runs in a worker thread with a cancel event; the
edge sets the event when the client disconnects, and the answer stops at its next step (a
silent model's stream is shut down at once: `backends.aborts`).

* Streamed routes (/chat/stream, streamed /v1/chat/completions): `until_gone` is the response's
  body. Starlette cancels the body when the client disconnects (it listens for http.disconnect
  while streaming); the body's `finally` sets the cancel.
* /mcp: the SDK answers a tool call in a task of its own and does not look at the connection
  while the tool runs. `WatchDisconnect` wraps the route: once the request body is read, it waits
  for http.disconnect and sets the request's cancel, which a tool finds in `LEAVING`.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import AsyncIterator, Callable, Iterator

from ..errors import Cancelled

# the cancel of the request being answered (the /mcp route sets it; a tool's thread inherits it)
LEAVING: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("dgrag_leaving", default=None)


async def until_gone(produce: Callable[[threading.Event], Iterator[str]]) -> AsyncIterator[str]:
    """`produce(cancel)`'s pieces, produced in a worker thread; when the client leaves (this
    generator is cancelled or closed) the cancel is set and the pieces are dropped."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue = asyncio.Queue()
    cancel = threading.Event()

    def put(kind: str, value=None) -> None:
        try:
            loop.call_soon_threadsafe(pieces.put_nowait, (kind, value))
        except RuntimeError:  # the loop is gone (the server stopped): nobody to hand it to
            pass

    def work() -> None:
        try:
            for piece in produce(cancel):
                if cancel.is_set():
                    break
                put("piece", piece)
        except Cancelled:
            pass
        except BaseException as exc:  # noqa: BLE001 - raised in the response, as any route error
            put("error", exc)
        finally:
            put("end")

    threading.Thread(target=work, name="dgrag-answer-stream", daemon=True).start()
    try:
        while True:
            kind, value = await pieces.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        cancel.set()


class WatchDisconnect:
    """ASGI wrapper: the request's cancel (`LEAVING`) is set when its client disconnects before
    the response is complete."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cancel = threading.Event()
        token = LEAVING.set(cancel)
        body_read = asyncio.Event()
        done = False

        async def reading():
            message = await receive()
            if message["type"] == "http.disconnect":
                cancel.set()
            elif not message.get("more_body", False):
                body_read.set()
            return message

        async def watch():
            await body_read.wait()
            # after the body, the next message is http.disconnect: the client left, or the
            # response is complete (then nothing is running any more)
            if (await receive())["type"] == "http.disconnect" and not done:
                cancel.set()

        watcher = asyncio.ensure_future(watch())
        try:
            await self.app(scope, reading, send)
        finally:
            done = True
            watcher.cancel()
            LEAVING.reset(token)
