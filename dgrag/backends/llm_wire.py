"""Wire-level helpers of the LLM client: tolerant JSON parsing, image parts, message / tool
normalisation, a URL's host for messages and Retry-After parsing. No network here."""
from __future__ import annotations

import base64
import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import urlsplit

_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|$)", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_MISSING = object()


def _try_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _extract_outermost(text: str) -> Any:
    """The outermost {...} or [...] of `text` that parses (earliest opener first)."""
    decoder = json.JSONDecoder()
    starts = sorted(i for i in (text.find("{"), text.find("[")) if i >= 0)
    for start in starts:
        closer = "}" if text[start] == "{" else "]"
        end = text.rfind(closer)
        if end > start:
            for candidate in (text[start:end + 1], _TRAILING_COMMA_RE.sub(r"\1", text[start:end + 1])):
                value = _try_loads(candidate)
                if value is not _MISSING:
                    return value
        try:
            return decoder.raw_decode(text, start)[0]
        except (ValueError, RecursionError):
            continue
    return _MISSING


def parse_json(text: str | None) -> Any:
    """Tolerant JSON reading of a model's output.

    Drops `<think>...</think>` blocks and ```json fences, then parses the whole text, else the
    outermost {...} or [...] it contains. Raises ValueError (with a short reason) when there is
    no valid JSON -- e.g. output truncated mid-object.
    """
    if text is None:
        raise ValueError("no output")
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    stripped = _THINK_RE.sub("", text).strip()
    candidates: list[str] = []
    for m in _FENCE_RE.finditer(stripped):
        body = m.group(2).strip()
        if body:
            candidates.append(body)
    candidates.append(stripped)
    for c in candidates:
        value = _try_loads(c)
        if value is not _MISSING:
            return value
    for c in candidates:
        value = _extract_outermost(c)
        if value is not _MISSING:
            return value
    if not stripped:
        raise ValueError("empty output")
    snippet = stripped if len(stripped) <= 80 else stripped[:60] + " ... " + stripped[-15:]
    raise ValueError(f"no valid JSON in output ({len(stripped)} chars): {snippet!r}")


def image_part(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    """A chat content part carrying an image as a base64 data URL (for vision models)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("image_part needs bytes")
    mime = (mime or "image/png").strip().lower()
    if "/" not in mime:
        mime = "image/" + mime
    b64 = base64.b64encode(bytes(data)).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{b64}"}}


def norm_messages(messages: Sequence[Mapping[str, Any]] | str) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for m in messages:
        if not isinstance(m, Mapping):
            raise TypeError(f"a chat message must be a dict, got {type(m).__name__}")
        out.append(dict(m))
    if not out:
        raise ValueError("no messages")
    return out


def norm_tools(tools: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """OpenAI tool specs; a bare {"name", "parameters", ...} function spec is wrapped."""
    if not tools:
        return None
    out = []
    for t in tools:
        t = dict(t)
        if t.get("type") == "function" or "function" in t:
            t.setdefault("type", "function")
            out.append(t)
        elif "name" in t:
            out.append({"type": "function", "function": t})
        else:
            raise ValueError(f"not a tool spec: {t!r}")
    return out


def host_of(url: str) -> str:
    """The host[:port] of a URL (never its user-info or query, which may hold secrets)."""
    try:
        parts = urlsplit(url)
        return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else "?"
    except ValueError:
        return "?"


def parse_retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        pass
    try:
        when = parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
