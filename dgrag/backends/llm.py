"""The LLM backend: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp, ...).

One `LLM` object serves the whole process (it is thread-safe). It adds what the pipelines need
on top of the `openai` client, each in a module of its own:

* a response cache (`llm_cache`: `LLMCache`; `MemoryCache` there, a persistent one elsewhere)
  keyed by `cache_key(model, messages, params)` -- a hit makes no HTTP call;
* retries with exponential backoff and full jitter on 429 (honouring Retry-After, capped), 5xx,
  timeouts, connection errors and unusable output (invalid / truncated JSON in json mode)
  (`llm_retry`; what each reply or error means: `llm_outcomes`);
* a fallback endpoint/model, tried the same way when the primary's retries are exhausted
  (`llm_transport`: the endpoints and the order a call tries them in);
* streaming, retried only until the first piece is yielded (`llm_stream`);
* `LLMError` with a reason on final failure; the API keys never appear in errors or logs.

This module is the client itself: its settings, its calls, its counters and the masking.
`LLM.configured` is False when no base URL / model is set: callers then use their offline path.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from ..errors import Cancelled, ConfigError, LLMError
from .llm_cache import LLMCache, MemoryCache, cache_key, cached, keep
from .llm_outcomes import Failure, final_error
from .llm_retry import Counters, Retrying
from .llm_stream import stream_events
from .llm_transport import Endpoints
from .llm_wire import host_of, image_part, norm_messages, norm_tools, parse_json

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Settings

log = logging.getLogger(__name__)

JSON_RESPONSE_FORMAT: dict[str, str] = {"type": "json_object"}


def _counter(name: str, doc: str) -> property:
    return property(lambda self: self._counts.get(name), doc=doc)


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
        self._endpoints = Endpoints.configure(
            base_url, model, api_key, fallback_base_url=fallback_base_url, fallback_model=fallback_model,
            fallback_api_key=fallback_api_key, disable_fallback=disable_fallback, timeout_s=self.timeout_s)
        self._primary = self._endpoints.primary
        self._vision_model = (vision_model or "").strip()
        self._secrets = sorted({s for s in (api_key, fallback_api_key) if s}, key=len, reverse=True)
        self._counts = Counters()

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
        return self._endpoints.fallback is not None

    def stats(self) -> dict[str, int]:
        return self._counts.snapshot()

    def reset_counters(self) -> None:
        self._counts.reset()

    def __repr__(self) -> str:
        fallback = self._endpoints.fallback
        fb = f", fallback={fallback.model!r}@{host_of(fallback.base_url)}" if fallback else ""
        key = ", api_key='***'" if self._primary.api_key else ""
        return f"LLM(model={self.model!r}, base_url={host_of(self._primary.base_url)!r}{key}{fb})"

    def close(self) -> None:
        self._endpoints.close()

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
        msgs = norm_messages(messages)
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
        msgs = norm_messages(messages)
        specs = norm_tools(tools)
        if not specs:
            raise ValueError("chat_with_tools needs at least one tool")
        params = self._params(max_tokens, None, specs, tool_choice)
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
        msgs = norm_messages(messages)
        params = self._params(max_tokens, None, norm_tools(tools), None)
        return stream_events(self._endpoints.plan(model), msgs, params, self._retrying(), cancel)

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

    def _retrying(self) -> Retrying:
        """The retry policy of a call that starts now (the attributes may change between calls)."""
        return Retrying(self.max_retries, self.backoff_s, self.max_backoff_s, self.timeout_s, self._counts, self.mask)

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
        """The cache, then each endpoint of the plan with its retries; the answer is kept under
        the key of the endpoint/model that gave it."""
        Cancelled.check(cancel)
        plan = self._endpoints.plan(model)
        key_params = {k: v for k, v in params.items() if v is not None}
        keys = [cache_key(m, messages, key_params) for _, m in plan]
        hit = cached(self.cache, keys, lambda value: self._valid(value, mode), self.mask)
        if hit is not None:
            self._counts.inc("cache_hits")
            return hit
        retrying = self._retrying()
        history: list[tuple[str, int, Failure]] = []
        for (ep, m), key in zip(plan, keys):
            if ep.label == "fallback":
                log.warning("LLM primary failed; trying the fallback %s", ep.where(m))
            value, attempts, failure = retrying.attempts(ep, m, messages, params, mode, cancel)
            if value is not None:
                if ep.label == "fallback":
                    self._counts.inc("fallbacks")
                keep(self.cache, key, m, value, self.mask)
                return value
            assert failure is not None
            history.append((ep.where(m), attempts, failure))
        self._counts.inc("failures")
        raise final_error(history, mode, self.mask)


__all__ = ["LLM", "LLMCache", "MemoryCache", "cache_key", "parse_json", "image_part", "JSON_RESPONSE_FORMAT"]
