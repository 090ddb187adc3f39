"""What every route of the app's edge answers a refusal with: the HTTP status of a typed error,
and a JSON error sent from ASGI code (the middleware, the /mcp dispatcher); and who is calling
(`client_key`), which the rate limit and the per-client bounds count by."""
from __future__ import annotations

import ipaddress
import json

from ..errors import (AccessDenied, ConfigError, DeadlineExceeded, DgragError, IndexFileError, IndexNotReady,
                      LogUnavailable, RequestTooLarge, UnknownAnswer)


def _status(exc: DgragError) -> int:
    if isinstance(exc, AccessDenied):
        return 403
    if isinstance(exc, ConfigError):  # QueryRejected included
        return 422
    if isinstance(exc, RequestTooLarge):
        return 413
    if isinstance(exc, DeadlineExceeded):
        return 504
    if isinstance(exc, UnknownAnswer):
        return 404
    if isinstance(exc, (IndexFileError, IndexNotReady, LogUnavailable)):
        return 503
    return 400


async def _send_error(send, status: int, error: str, kind: str, headers: dict | None = None) -> None:
    body = json.dumps({"error": error, "type": kind}).encode()
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": body})


def client_key(scope) -> str:
    """Who is calling: behind a proxy (Hugging Face Spaces puts its own address in the
    connection), the nearest public address in X-Forwarded-For, which the proxy appends;
    addresses a client wrote further left are not trusted. A caller that reaches the server
    from a public address is no proxy: its own header is ignored (a fresh address per call
    would otherwise be a fresh budget per call)."""
    client = scope.get("client")
    if client and _is_global(client[0]):
        return client[0]
    headers = dict(scope.get("headers") or [])
    forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1")
    for part in reversed([p.strip() for p in forwarded.split(",") if p.strip()]):
        try:
            if ipaddress.ip_address(part).is_global:
                return part
        except ValueError:
            continue
    return client[0] if client else "unknown"


def _is_global(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_global
    except ValueError:
        return False
