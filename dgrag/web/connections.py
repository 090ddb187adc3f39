"""Bounded connections: what slow or greedy clients can hold of the server.

uvicorn bounds an idle kept-alive connection (`timeout_keep_alive`) but waits for ever on a
client that sends half its headers or half its body, each holding a file descriptor and a
request slot. Here:

* `bounded_protocol`: uvicorn's HTTP protocol (h11, or httptools where installed) with two
  deadlines per request, the headers within `header_timeout_s` of the request's first byte (or
  of the connection), the body within `body_timeout_s` of the headers; past one the connection
  is closed. More than `max_connections` open at once: a new one gets a 503 and is closed.
* `PerClient`: ASGI middleware; a client (the rate limit's key: behind a proxy, its forwarded
  address) may have `max_connections_per_client` requests open at once (a half-sent body is
  one), and where the rate limit applies, `max_answers_per_client` answers running; more are a
  429 at once.
* `uvicorn_config`: the server's config with all of it (and `keep_alive_s`), which `dgrag serve`,
  app.py, the tests and the bench use alike.
"""
from __future__ import annotations

import threading
from collections import Counter

from .http import _send_error, client_key

_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: 32\r\nconnection: close\r\n\r\ntoo many connections; retry later")
# the routes that answer (retrieval rounds and an LLM): bounded per client with the rate limit
ANSWER_PATHS = ("/chat", "/chat/stream", "/v1/chat/completions", "/mcp")


def bounded_protocol(settings, base: type | None = None) -> type:
    """uvicorn's HTTP protocol class with the settings' header and body deadlines and
    connection cap (see the module's docstring)."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base  # noqa: N813
    header_s, body_s = float(settings.header_timeout_s), float(settings.body_timeout_s)
    cap = int(settings.max_connections)

    class Bounded(base):  # type: ignore[misc, valid-type]
        _deadline = None  # the armed deadline's TimerHandle
        _phase = ""  # "headers" | "body" | "": what the deadline waits for

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            if cap and len(self.connections) > cap:
                transport.write(_REFUSED)
                transport.close()
                return
            self._arm("headers", header_s)

        def data_received(self, data: bytes) -> None:
            if not self._phase and (self.cycle is None or self.cycle.response_complete):
                self._arm("headers", header_s)  # a new request's first bytes (after a kept-alive wait)
            before = self.cycle
            super().data_received(data)
            self._follow(before)

        def on_response_complete(self) -> None:
            before = self.cycle
            super().on_response_complete()
            self._follow(before)  # a pipelined request may have started here

        def connection_lost(self, exc) -> None:
            self._arm("", 0)
            super().connection_lost(exc)

        def _follow(self, before) -> None:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return
            if cycle is not before and cycle.more_body:
                self._arm("body", body_s)  # headers in: now the body
            elif not cycle.more_body and self._phase:
                self._arm("", 0)  # the request is in: the app's own timeouts take over

        def _arm(self, phase: str, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._phase, self._deadline = phase, None
            if phase and seconds > 0:
                self._deadline = self.loop.call_later(seconds, self._expired)

        def _expired(self) -> None:
            self._phase, self._deadline = "", None
            if not self.transport.is_closing():
                self.transport.close()  # a request that never arrived whole: nothing to answer

    Bounded.__name__ = f"Bounded{base.__name__}"
    return Bounded


def uvicorn_config(app, host: str, port: int, settings, **kw):
    """The server's uvicorn.Config: the bounded protocol, `keep_alive_s`, quiet logs."""
    import uvicorn

    kw.setdefault("log_level", "warning")
    return uvicorn.Config(app, host=host, port=port, http=bounded_protocol(settings),
                          timeout_keep_alive=max(1, round(settings.keep_alive_s)), **kw)


class PerClient:
    """ASGI middleware: requests open per client, and answers running per client where the
    rate limit applies (`answers` > 0); over either, a 429 at once."""

    def __init__(self, app, requests: int, answers: int = 0):
        self.app, self.requests, self.answers = app, int(requests), int(answers)
        self._open: Counter[str] = Counter()
        self._answering: Counter[str] = Counter()
        self._lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        key = client_key(scope)
        answer = bool(self.answers) and scope["method"] == "POST" and (scope["path"].rstrip("/") or "/") in ANSWER_PATHS
        with self._lock:
            refused = self._refusal(key, answer)
            if refused is None:
                self._open[key] += 1
                self._answering[key] += answer
        if refused is not None:
            return await _send_error(send, 429, refused, "TooManyOpen", {"retry-after": "1"})
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                self._drop(self._open, key, 1)
                self._drop(self._answering, key, answer)

    def _refusal(self, key: str, answer: bool) -> str | None:
        if self.requests and self._open[key] >= self.requests:
            return f"too many open requests from this client (at most {self.requests}); retry when one ends"
        if answer and self._answering[key] >= self.answers:
            return (f"too many answers running for this client (at most {self.answers}); "
                    "retry when one ends")
        return None

    @staticmethod
    def _drop(counts: Counter, key: str, n: int) -> None:
        if n:
            counts[key] -= n
            if counts[key] <= 0:
                del counts[key]
