"""What came back from an LLM call: a usable text, or a `Failure` saying whether to retry.

Functions over the `openai` client's responses and exceptions, shared by the plain, JSON, tool
and streaming calls of `llm.LLM`.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import LLMError
from .llm_wire import parse_json, parse_retry_after

log = logging.getLogger("dgrag.backends.llm")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
BAD_OUTPUT = frozenset({"invalid_json", "truncated"})  # the model answered, but not usably


@dataclass
class Failure:
    kind: str  # rate_limit | server | timeout | connection | malformed | empty | invalid_json | truncated | client | error
    reason: str
    retryable: bool
    retry_after: float | None = None


def read_response(resp: Any, mode: str) -> tuple[str | None, Failure | None]:
    """The text of a completion (tool calls as JSON in `tools` mode), or why it is unusable."""
    try:
        choice = resp.choices[0]
        msg = choice.message
        finish = choice.finish_reason
        content = msg.content or ""
    except (AttributeError, IndexError, TypeError, KeyError):
        return None, Failure("malformed", "response without choices", True)
    if not isinstance(content, str):
        content = str(content)
    if mode == "tools":
        calls = []
        for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
            fn = getattr(tc, "function", None)
            name = getattr(fn, "name", None) or ""
            args = getattr(fn, "arguments", None) or ""
            if not name:
                return None, Failure("malformed", "tool call without a name", True)
            if finish == "length":
                return None, Failure("truncated", "tool call cut at max_tokens (finish_reason=length)", True)
            if args.strip():
                try:
                    json.loads(args)
                except ValueError:
                    return None, Failure("invalid_json", f"tool {name!r} arguments are not JSON", True)
            calls.append({"id": getattr(tc, "id", None) or f"call_{i}", "name": name, "arguments": args or "{}"})
        if not calls and not content.strip():
            return None, Failure("empty", "empty response", True)
        return json.dumps({"content": content or None, "tool_calls": calls}, ensure_ascii=False), None
    if mode == "json":
        if finish == "length":
            return None, Failure("truncated", "output cut at max_tokens (finish_reason=length)", True)
        try:
            parse_json(content)
        except ValueError as exc:
            return None, Failure("invalid_json", str(exc), True)
        return content, None
    if not content.strip():
        return None, Failure("empty", "empty response", True)
    if finish == "length":
        log.info("LLM output cut at max_tokens (finish_reason=length)")
    return content, None


def classify(exc: BaseException, mask: Callable[[Any], str], timeout_s: float) -> Failure:
    """What an exception of the client means: its kind, a masked reason, whether to retry."""
    import openai

    msg = mask(getattr(exc, "message", None) or str(exc) or type(exc).__name__)
    if len(msg) > 300:
        msg = msg[:300] + "..."
    if isinstance(exc, openai.RateLimitError):
        return Failure("rate_limit", f"HTTP 429 rate limited: {msg}", True, parse_retry_after(exc.response.headers))
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", f"timed out after {timeout_s:g}s", True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", f"connection error: {msg}", True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status >= 500 or status in RETRYABLE_STATUS
        retry_after = parse_retry_after(exc.response.headers) if retryable else None
        return Failure("server" if status >= 500 else ("rate_limit" if status == 429 else "client"),
                        f"HTTP {status}: {msg}", retryable, retry_after)
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure("malformed", f"malformed response: {msg}", True)
    if isinstance(exc, openai.APIError):
        return Failure("error", f"API error: {msg}", True)
    try:
        import httpx2 as _httpx  # the transport of openai 3.x
    except ImportError:  # pragma: no cover
        import httpx as _httpx  # type: ignore[no-redef]
    if isinstance(exc, _httpx.TimeoutException):
        return Failure("timeout", f"timed out after {timeout_s:g}s", True)
    if isinstance(exc, (_httpx.TransportError, ConnectionError)):
        return Failure("connection", f"connection error: {type(exc).__name__}: {msg}", True)
    if isinstance(exc, ValueError):  # an envelope that is not JSON
        return Failure("malformed", f"malformed response: {type(exc).__name__}: {msg}", True)
    return Failure("error", f"{type(exc).__name__}: {msg}", False)


def final_error(history: list[tuple[str, int, Failure]], mode: str, mask: Callable[[Any], str]) -> LLMError:
    """One error for a call that failed everywhere: the last reason, then every endpoint's."""
    parts = [f"{where}: {f.reason} ({n} attempt{'s' if n != 1 else ''})" for where, n, f in history]
    last = history[-1][2] if history else Failure("error", "no endpoint", False)
    if mode == "json" and all(f.kind in BAD_OUTPUT for _, _, f in history):
        head = "invalid JSON: " + last.reason
    else:
        head = "LLM call failed: " + last.reason
    err = LLMError(mask(head + " [" + "; ".join(parts) + "]"))
    err.reason = last.kind  # type: ignore[attr-defined]
    err.attempts = sum(n for _, n, _ in history)  # type: ignore[attr-defined]
    return err
