"""The LLM client's response cache: where answers are kept (`LLMCache`; `MemoryCache` here, the
index file's table elsewhere), the key a request is kept under (`cache_key`), and the reads and
writes of a call, which never fail it (a broken cache is logged and passed over)."""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from .llm_wire import norm_messages

log = logging.getLogger("dgrag.backends.llm")


@runtime_checkable
class LLMCache(Protocol):
    """Where successful responses are kept (the key is `cache_key(...)`)."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, model: str, response: str) -> None: ...


class MemoryCache:
    """An in-process `LLMCache` (a dict behind a lock)."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            hit = self._data.get(key)
        return None if hit is None else hit[1]

    def put(self, key: str, model: str, response: str) -> None:
        with self._lock:
            self._data[key] = (model, response)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    return str(obj)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def cache_key(model: str, messages: Sequence[Mapping[str, Any]] | str, params: Mapping[str, Any] | None) -> str:
    """sha256 (hex) of a canonical JSON of the model, the messages (image parts included) and
    the request parameters (temperature, max_tokens, response_format, tools, ...; None values
    are dropped, so a missing and a None parameter give the same key)."""
    norm_params: dict[str, Any] = {}
    for k, v in (params or {}).items():
        if v is None:
            continue
        if k == "temperature":
            v = float(v)
        norm_params[k] = v
    payload = {"model": model, "messages": norm_messages(messages), "params": norm_params}
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


def cached(cache: LLMCache | None, keys: Iterable[str], usable: Callable[[str], bool],
           mask: Callable[[Any], str]) -> str | None:
    """The first kept answer under `keys` (in order, each key once) that is `usable`, else None."""
    if cache is None:
        return None
    for key in dict.fromkeys(keys):
        try:
            hit = cache.get(key)
        except Exception as exc:
            log.warning("LLM cache read failed: %s", mask(exc))
            hit = None
        if hit is not None and usable(hit):
            return hit
    return None


def keep(cache: LLMCache | None, key: str, model: str, value: str, mask: Callable[[Any], str]) -> None:
    """Keep an answer; a cache that cannot take it is logged, the answer still returned."""
    if cache is None:
        return
    try:
        cache.put(key, model, value)
    except Exception as exc:
        log.warning("LLM cache write failed: %s", mask(exc))
