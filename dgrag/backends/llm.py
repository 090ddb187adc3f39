"""The LLM backend: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp, ...).

One `LLM` object serves the whole process (it is thread-safe). It adds what the pipelines need
on top of the `openai` client:

* a response cache (`LLMCache`; `MemoryCache` here, a persistent one elsewhere) keyed by
  `cache_key(model, messages, params)` -- a hit makes no HTTP call;
* retries with exponential backoff and full jitter on 429 (honouring Retry-After, capped), 5xx,
  timeouts, connection errors and unusable output (invalid / truncated JSON in json mode);
* a fallback endpoint/model, tried the same way when the primary's retries are exhausted;
* `LLMError` with a reason on final failure; the API keys never appear in errors or logs.

`LLM.configured` is False when no base URL / model is set: callers then use their offline path.
"""
from __future__ import annotations

import contextlib
import json
import logging
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from ..errors import Cancelled, ConfigError, LLMError
from .llm_outcomes import Failure, classify, final_error, read_response, stream_deltas
from .llm_wire import (  # noqa: F401 - re-exported: callers import them from here
    LLMCache, MemoryCache, _FENCE_RE, _MISSING, _THINK_RE, _TRAILING_COMMA_RE, _canonical, _extract_outermost, _host, _json_default, _norm_messages, _norm_tools, _parse_retry_after, _try_loads, cache_key, image_part, parse_json,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Settings

log = logging.getLogger(__name__)

JSON_RESPONSE_FORMAT: dict[str, str] = {"type": "json_object"}
@dataclass
class _Endpoint:
    label: str  # primary | fallback
    base_url: str
    model: str
    api_key: str
    timeout_s: float
    json_format_ok: bool = True
    _client: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from openai import OpenAI

                    self._client = OpenAI(base_url=self.base_url, api_key=self.api_key or "none",
                                          timeout=self.timeout_s, max_retries=0)
        return self._client

    def where(self, model: str) -> str:
        return f"{self.label} {model} @ {_host(self.base_url)}"


# ---------------------------------------------------------------------------------------------
# the client
# ---------------------------------------------------------------------------------------------
COUNTERS = ("calls", "cache_hits", "failures", "retries", "fallbacks")  # LLM.stats(), in this order


def _counter(name: str, doc: str) -> property:
    def read(self) -> int:
        with self._lock:
            return self._counts[name]
    return property(read, doc=doc)


class LLM:
    """A chat-completions client with cache, retries, fallback and masked secrets (thread-safe)."""

    calls = _counter("calls", "HTTP requests made (every attempt, both endpoints, streams included).")
    cache_hits = _counter("cache_hits", "Calls answered from the cache.")
    failures = _counter("failures", "Calls that ended in LLMError (after all retries and the fallback).")
    retries = _counter("retries", "Failed attempts (each one followed by a retry, the fallback, or the final error).")
    fallbacks = _counter("fallbacks", "Calls answered by the fallback endpoint.")

    def __init__(
        self,
        base_url: str = "",
        model: str = "",
        api_key: str = "",
        *,
        vision_model: str = "",
        fallback_base_url: str = "",
        fallback_model: str = "",
        fallback_api_key: str = "",
        disable_fallback: bool = False,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_tokens: int = 2048,
        temperature: float | None = 0.0,
        cache: LLMCache | None = None,
    ) -> None:
        if timeout_s is None or float(timeout_s) <= 0:
            raise ConfigError("llm_timeout_s must be > 0")
        if int(max_retries) < 0:
            raise ConfigError("llm_max_retries must be >= 0")
        if float(backoff_s) < 0:
            raise ConfigError("llm_backoff_s must be >= 0")
        if int(max_tokens) <= 0:
            raise ConfigError("max_new_tokens must be > 0")
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_tokens = int(max_tokens)
        self.temperature = None if temperature is None else float(temperature)
        self.cache = cache
        base_url = (base_url or "").strip()
        model = (model or "").strip()
        self._primary = _Endpoint("primary", base_url, model, api_key or "", self.timeout_s)
        self._vision_model = (vision_model or "").strip()
        self._fallback: _Endpoint | None = None
        self._fallback_model = (fallback_model or "").strip()
        fb_url = (fallback_base_url or "").strip()
        if not disable_fallback and (fb_url or self._fallback_model) and self.configured:
            url = fb_url or base_url
            key = fallback_api_key or (api_key if url.rstrip("/") == base_url.rstrip("/") else "")
            if not (url.rstrip("/") == base_url.rstrip("/") and (self._fallback_model or model) == model):
                self._fallback = _Endpoint("fallback", url, self._fallback_model or model, key or "", self.timeout_s)
        self._secrets = sorted({s for s in (api_key, fallback_api_key) if s}, key=len, reverse=True)
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTERS, 0)

    @classmethod
    def from_settings(cls, settings: "Settings", cache: LLMCache | None = None) -> "LLM":
        return cls(
            settings.llm_base_url,
            settings.llm_model,
            settings.llm_api_key,
            vision_model=settings.llm_vision_model,
            fallback_base_url=settings.llm_fallback_base_url,
            fallback_model=settings.llm_fallback_model,
            fallback_api_key=settings.llm_fallback_api_key,
            disable_fallback=settings.disable_fallback,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            backoff_s=settings.llm_backoff_s,
            max_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
            cache=cache,
        )

    # -- properties ---------------------------------------------------------------------------
    @property
    def configured(self) -> bool:
        """False when no base URL or model is set (callers then use their offline path)."""
        return bool(self._primary.base_url and self._primary.model)

    @property
    def model(self) -> str:
        return self._primary.model

    @property
    def vision_model(self) -> str:
        """The model for image inputs: llm_vision_model, else llm_model."""
        return self._vision_model or self._primary.model

    @property
    def has_fallback(self) -> bool:
        return self._fallback is not None

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset_counters(self) -> None:
        with self._lock:
            self._counts = dict.fromkeys(COUNTERS, 0)

    def _inc(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def __repr__(self) -> str:
        fb = f", fallback={self._fallback.model!r}@{_host(self._fallback.base_url)}" if self._fallback else ""
        key = ", api_key='***'" if self._primary.api_key else ""
        return f"LLM(model={self.model!r}, base_url={_host(self._primary.base_url)!r}{key}{fb})"

    def close(self) -> None:
        for ep in (self._primary, self._fallback):
            if ep is not None and ep._client is not None:
                try:
                    ep._client.close()
                except Exception:  # pragma: no cover - best effort
                    pass
                ep._client = None

    # -- secrets ------------------------------------------------------------------------------
    def mask(self, text: Any) -> str:
        """`text` with the API keys (and any bearer token) replaced by ***."""
        s = str(text)
        for secret in self._secrets:
            s = s.replace(secret, "***")
        return re.sub(r"(?i)(bearer\s+)[^\s'\"]+", r"\1***", s)

    # -- public calls -------------------------------------------------------------------------
    image_part = staticmethod(image_part)
    parse_json = staticmethod(parse_json)

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        model: str | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """The assistant's text. Cached; retried; falls back; raises LLMError on final failure.

        With json_mode the request asks for a JSON object and an answer that `parse_json`
        cannot read (or that was cut at max_tokens) counts as a retryable failure.
        `cancel` (every call takes one): once set, the call raises `Cancelled` at its next
        step -- before a request, in a back-off, when a reply or a streamed piece arrives.
        """
        self._require()
        msgs = _norm_messages(messages)
        params = self._params(max_tokens, JSON_RESPONSE_FORMAT if json_mode else None, None, None)
        return self._call(msgs, params, model, "json" if json_mode else "text", cancel)

    def complete_json(self, messages: Sequence[Mapping[str, Any]] | str, **kw: Any) -> Any:
        """`complete(json_mode=True)` parsed with `parse_json`; LLMError("invalid JSON: ...")
        when the output is still not JSON after the retries."""
        kw.pop("json_mode", None)
        text = self.complete(messages, json_mode=True, **kw)
        try:
            return parse_json(text)
        except ValueError as exc:  # not reachable through complete(), kept as a guard
            raise LLMError(f"invalid JSON: {self.mask(exc)}") from None

    def chat_with_tools(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        tools: Iterable[Mapping[str, Any]],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """One non-streaming turn with tools: {"content": str | None, "tool_calls": [{"id",
        "name", "arguments" (a JSON string)}]}. Cached, retried, falls back like `complete`."""
        self._require()
        msgs = _norm_messages(messages)
        norm_tools = _norm_tools(tools)
        if not norm_tools:
            raise ValueError("chat_with_tools needs at least one tool")
        params = self._params(max_tokens, None, norm_tools, tool_choice)
        return json.loads(self._call(msgs, params, model, "tools", cancel))

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        *,
        model: str | None = None,
        tools: Iterable[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Streaming chat: yields {"type": "text", "text": delta} and, once the stream ended,
        {"type": "tool_call", "id", "name", "arguments"} per tool call. Not cached. Retried
        (and falls back) only while nothing has been yielded; a failure after the first
        yielded event raises LLMError."""
        self._require()
        msgs = _norm_messages(messages)
        params = self._params(max_tokens, None, _norm_tools(tools), None)
        return self._stream(msgs, params, model, cancel)

    @staticmethod
    def assistant_message(result: Mapping[str, Any]) -> dict[str, Any]:
        """The assistant message to append to the conversation after `chat_with_tools`."""
        msg: dict[str, Any] = {"role": "assistant", "content": result.get("content")}
        calls = result.get("tool_calls") or []
        if calls:
            msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c.get("arguments") or "{}"}}
                                 for c in calls]
        return msg

    @staticmethod
    def tool_message(call_id: str, content: Any) -> dict[str, Any]:
        """The message carrying a tool's result back to the model."""
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        return {"role": "tool", "tool_call_id": call_id, "content": text}

    # -- machinery ----------------------------------------------------------------------------
    def _require(self) -> None:
        if not self.configured:
            raise LLMError("no LLM configured (set llm_base_url and llm_model)")

    def _params(self, max_tokens: int | None, response_format: Mapping[str, Any] | None,
                tools: list[dict[str, Any]] | None, tool_choice: Any) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": int(max_tokens) if max_tokens else self.max_tokens,
            "response_format": dict(response_format) if response_format else None,
            "tools": tools,
            "tool_choice": tool_choice,
        }

    def _plan(self, model: str | None) -> list[tuple[_Endpoint, str]]:
        plan = [(self._primary, model or self._primary.model)]
        if self._fallback is not None:
            fb_model = self._fallback_model or model or self._primary.model
            if not (self._fallback.base_url.rstrip("/") == self._primary.base_url.rstrip("/") and fb_model == plan[0][1]):
                plan.append((self._fallback, fb_model))
        return plan

    def _request_kwargs(self, ep: _Endpoint, model: str, messages: list[dict], params: dict) -> dict[str, Any]:
        kw: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": params["max_tokens"]}
        if params.get("temperature") is not None:
            kw["temperature"] = params["temperature"]
        if params.get("response_format") and ep.json_format_ok:
            kw["response_format"] = params["response_format"]
        if params.get("tools"):
            kw["tools"] = params["tools"]
            if params.get("tool_choice") is not None:
                kw["tool_choice"] = params["tool_choice"]
        return kw

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return random.uniform(0.0, min(self.max_backoff_s, self.backoff_s * (2 ** attempt)))

    @staticmethod
    def _pause(delay: float, cancel: threading.Event | None) -> None:
        """The back-off before a retry; a cancel ends it at once."""
        if delay > 0:
            if cancel is None:
                time.sleep(delay)
            else:
                cancel.wait(delay)
        Cancelled.check(cancel)

    @staticmethod
    def _valid(value: str, mode: str) -> bool:
        if mode == "json":
            try:
                parse_json(value)
            except ValueError:
                return False
        elif mode == "tools":
            try:
                return isinstance(json.loads(value), dict)
            except ValueError:
                return False
        return True

    def _call(self, messages: list[dict], params: dict, model: str | None, mode: str,
              cancel: threading.Event | None = None) -> str:
        Cancelled.check(cancel)
        plan = self._plan(model)
        key_params = {k: v for k, v in params.items() if v is not None}
        keys = [cache_key(m, messages, key_params) for _, m in plan]
        if self.cache is not None:
            for key in dict.fromkeys(keys):
                try:
                    hit = self.cache.get(key)
                except Exception as exc:
                    log.warning("LLM cache read failed: %s", self.mask(exc))
                    hit = None
                if hit is not None and self._valid(hit, mode):
                    self._inc("cache_hits")
                    return hit
        history: list[tuple[str, int, Failure]] = []
        for (ep, m), key in zip(plan, keys):
            if ep.label == "fallback":
                log.warning("LLM primary failed; trying the fallback %s", ep.where(m))
            value, attempts, failure = self._attempts(ep, m, messages, params, mode, cancel)
            if value is not None:
                if ep.label == "fallback":
                    self._inc("fallbacks")
                if self.cache is not None:
                    try:
                        self.cache.put(key, m, value)
                    except Exception as exc:
                        log.warning("LLM cache write failed: %s", self.mask(exc))
                return value
            assert failure is not None
            history.append((ep.where(m), attempts, failure))
        self._inc("failures")
        raise final_error(history, mode, self.mask)

    def _attempts(self, ep: _Endpoint, model: str, messages: list[dict], params: dict, mode: str,
                  cancel: threading.Event | None = None) -> tuple[str | None, int, Failure | None]:
        failure: Failure | None = None
        total = self.max_retries + 1
        attempt = 0
        extra = 0  # one free retry when the server rejects response_format
        while attempt < total + extra:
            if attempt and failure is not None:
                self._pause(self._delay(max(0, attempt - 1 - extra), failure.retry_after), cancel)
            Cancelled.check(cancel)
            attempt += 1
            self._inc("calls")
            sent_format = bool(params.get("response_format")) and ep.json_format_ok
            try:
                resp = ep.client().chat.completions.create(**self._request_kwargs(ep, model, messages, params))
                Cancelled.check(cancel)  # a reply that comes after the cancel is not used
            except Cancelled:
                raise
            except Exception as exc:  # classified below; never escapes as a raw openai error
                failure = classify(exc, self.mask, self.timeout_s)
                if (failure.kind == "client" and sent_format and not extra
                        and getattr(exc, "status_code", None) in (400, 422)
                        and re.search(r"response.?format|json", failure.reason, re.IGNORECASE)):
                    ep.json_format_ok = False  # the server does not know response_format: ask without it
                    extra = 1
                    failure = Failure("client", failure.reason, True, 0.0)
            else:
                value, failure = read_response(resp, mode)
                if failure is None:
                    return value, attempt, None
            self._inc("retries")
            last = attempt >= total + extra or not failure.retryable
            log.warning("LLM %s attempt %d/%d failed: %s%s", ep.where(model), attempt, total + extra,
                        self.mask(failure.reason), "" if last else "; retrying")
            if not failure.retryable:
                break
        return None, attempt, failure

    def _stream(self, messages: list[dict], params: dict, model: str | None,
                cancel: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        history: list[tuple[str, int, Failure]] = []
        total = self.max_retries + 1
        for ep, m in self._plan(model):
            if ep.label == "fallback":
                log.warning("LLM primary stream failed; trying the fallback %s", ep.where(m))
            failure: Failure | None = None
            attempt = 0
            while attempt < total:
                if attempt and failure is not None:
                    self._pause(self._delay(attempt - 1, failure.retry_after), cancel)
                Cancelled.check(cancel)
                attempt += 1
                self._inc("calls")
                yielded = False
                calls: dict[int, dict[str, str]] = {}
                ends: dict[str, str] = {}
                try:
                    kw = self._request_kwargs(ep, m, messages, params)
                    with contextlib.closing(stream_deltas(ep.client().chat.completions.create(stream=True, **kw),
                                                          calls, ends, cancel)) as deltas:
                        for text in deltas:
                            yielded = True
                            yield {"type": "text", "text": text}
                    Cancelled.check(cancel)
                except Cancelled:
                    raise  # the stream is closed (stream_deltas); nothing to retry
                except Exception as exc:
                    failure = classify(exc, self.mask, self.timeout_s)
                    self._inc("retries")
                    if yielded:
                        self._inc("failures")
                        log.warning("LLM %s stream interrupted: %s", ep.where(m), self.mask(failure.reason))
                        raise LLMError(self.mask(f"stream interrupted after the first token: {failure.reason} "
                                                 f"[{ep.where(m)}]")) from None
                    log.warning("LLM %s stream attempt %d/%d failed: %s", ep.where(m), attempt, total,
                                self.mask(failure.reason))
                    if not failure.retryable:
                        break
                    continue
                if not yielded and not calls:
                    failure = Failure("empty", "empty response", True)
                    self._inc("retries")
                    log.warning("LLM %s stream attempt %d/%d failed: empty response", ep.where(m), attempt, total)
                    continue
                if ep.label == "fallback":
                    self._inc("fallbacks")
                for i in sorted(calls):
                    c = calls[i]
                    yield {"type": "tool_call", "id": c["id"] or f"call_{i}", "name": c["name"],
                           "arguments": c["arguments"] or "{}"}
                if ends.get("finish") == "length":
                    log.info("LLM stream cut at max_tokens (finish_reason=length)")
                return
            assert failure is not None
            history.append((ep.where(m), attempt, failure))
        self._inc("failures")
        raise final_error(history, "stream", self.mask)


__all__ = ["LLM", "LLMCache", "MemoryCache", "cache_key", "parse_json", "image_part", "JSON_RESPONSE_FORMAT"]
