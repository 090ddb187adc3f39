"""The "Ask" widget for any docs site: `GET /widget.js` (static/widget.js, plain JS, no build step),
and which web pages may call the app from a browser (`widget_origins`, CORS).

A page on another origin calls /chat/stream and /feedback with a JSON body, so the browser asks
first (a preflight OPTIONS); an allowed origin gets the CORS headers, any other origin a 403, to
the preflight and to a request sent without one (a form's text/plain POST would otherwise run an
answer the page cannot read, at the server's cost). Requests without an Origin (curl, servers)
and from the app's own pages are untouched; the rate limit and per-client bounds stay as they
are (this middleware sits outside them, so their 429s carry the CORS headers too)."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError
from .http import _send_error

WIDGET_JS = Path(__file__).with_name("static") / "widget.js"
# the routes a page may call from the browser (preflight included)
CORS_PATHS = ("/chat", "/chat/stream", "/retrieve", "/feedback")
CHANNEL_HEADER = "x-dgrag-channel"  # the widget says it is the widget (for the log's `channel`)
ALLOW_HEADERS = "content-type, x-dgrag-channel"
MAX_AGE = "600"


def parse_origins(spec: str) -> frozenset[str] | None:
    """`widget_origins` as a set of "scheme://host[:port]" (None: "*", any origin)."""
    spec = (spec or "").strip()
    if spec == "*":
        return None
    out = set()
    for part in (p.strip().rstrip("/") for p in spec.split(",")):
        if not part:
            continue
        bits = urlsplit(part)
        if bits.scheme not in ("http", "https") or not bits.netloc or bits.path or bits.query:
            raise ConfigError(f"widget_origins: {part!r} is not an origin (e.g. https://docs.example.com)")
        out.add(f"{bits.scheme}://{bits.netloc}".lower())
    return frozenset(out)


def channel_of(header: str | None, default: str) -> str:
    """'widget' when the widget sent the request (its X-Dgrag-Channel header), else `default`
    (no other value is taken from a client)."""
    return "widget" if (header or "").strip().lower() == "widget" else default


class WidgetCors:
    """ASGI middleware: CORS for CORS_PATHS, allowed origins only (see the module's docstring)."""

    def __init__(self, app, origins: str):
        self.app, self.allowed = app, parse_origins(origins)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (scope["path"].rstrip("/") or "/") not in CORS_PATHS:
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        origin = headers.get("origin", "")
        if not origin or _same_origin(origin, headers.get("host", "")):
            return await self.app(scope, receive, send)
        if self.allowed is not None and origin.rstrip("/").lower() not in self.allowed:
            return await _send_error(send, 403, f"the origin {origin[:100]} may not call this app (widget_origins)",
                                     "OriginNotAllowed", {"vary": "Origin"})
        cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await send({"type": "http.response.start", "status": 204, "headers": cors + [
                (b"access-control-allow-methods", b"POST, OPTIONS"),
                (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
                (b"access-control-max-age", MAX_AGE.encode()), (b"content-length", b"0")]})
            return await send({"type": "http.response.body", "body": b""})

        async def with_cors(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors,
                                                  (b"access-control-expose-headers", b"retry-after")]}
            await send(message)

        await self.app(scope, receive, with_cors)


def _same_origin(origin: str, host: str) -> bool:
    """A page of the app itself (the origin's host and port are the request's Host)."""
    return bool(host) and urlsplit(origin).netloc.lower() == host.lower()


def add_route(app) -> None:
    from fastapi.responses import Response

    body = WIDGET_JS.read_bytes()  # read once: it is package data and does not change while serving

    @app.get("/widget.js", include_in_schema=False)
    def widget_js():
        return Response(body, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"})
