"""What every route of the app's edge answers a refusal with: the HTTP status of a typed error,
and a JSON error sent from ASGI code (the middleware, the /mcp dispatcher)."""
from __future__ import annotations

import json

from ..errors import (AccessDenied, ConfigError, DeadlineExceeded, DgragError, IndexFileError, IndexNotReady,
                      RequestTooLarge)


def _status(exc: DgragError) -> int:
    if isinstance(exc, AccessDenied):
        return 403
    if isinstance(exc, ConfigError):  # QueryRejected included
        return 422
    if isinstance(exc, RequestTooLarge):
        return 413
    if isinstance(exc, DeadlineExceeded):
        return 504
    if isinstance(exc, (IndexFileError, IndexNotReady)):
        return 503
    return 400


async def _send_error(send, status: int, error: str, kind: str, headers: dict | None = None) -> None:
    body = json.dumps({"error": error, "type": kind}).encode()
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": body})
