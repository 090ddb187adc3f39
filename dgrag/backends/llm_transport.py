"""Where an LLM request goes: the endpoints (the primary and the fallback, each with an `openai`
client built on first use), the endpoint/model pairs a call tries in order, and the arguments
of one request. No retries here (`llm_retry`) and no network until a client is asked for."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .llm_wire import host_of


@dataclass
class Endpoint:
    label: str  # primary | fallback
    base_url: str
    model: str
    api_key: str
    timeout_s: float
    json_format_ok: bool = True  # False once the server refused response_format
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
        return f"{self.label} {model} @ {host_of(self.base_url)}"

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # pragma: no cover - best effort
                pass
            self._client = None


def same_server(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


@dataclass
class Endpoints:
    """The primary endpoint and the fallback (None: there is none)."""
    primary: Endpoint
    fallback: Endpoint | None = None
    fallback_model: str = ""  # as set: when empty, the fallback takes the call's model

    @classmethod
    def configure(cls, base_url: str, model: str, api_key: str, *, fallback_base_url: str, fallback_model: str,
                  fallback_api_key: str, disable_fallback: bool, timeout_s: float) -> "Endpoints":
        """The fallback is another server or another model: unset, disabled, without a configured
        primary, or the same server and model as the primary, there is none. On the primary's
        server it uses the primary's key unless it has its own; elsewhere never."""
        base_url, model = (base_url or "").strip(), (model or "").strip()
        out = cls(Endpoint("primary", base_url, model, api_key or "", timeout_s), None, (fallback_model or "").strip())
        fb_url = (fallback_base_url or "").strip()
        if not disable_fallback and (fb_url or out.fallback_model) and base_url and model:
            url = fb_url or base_url
            key = fallback_api_key or (api_key if same_server(url, base_url) else "")
            if not (same_server(url, base_url) and (out.fallback_model or model) == model):
                out.fallback = Endpoint("fallback", url, out.fallback_model or model, key or "", timeout_s)
        return out

    def plan(self, model: str | None) -> list[tuple[Endpoint, str]]:
        """The endpoint/model pairs a call tries, in order: the primary with the call's model
        (else its own), then the fallback, unless that would be the same pair again."""
        plan = [(self.primary, model or self.primary.model)]
        if self.fallback is not None:
            fb_model = self.fallback_model or model or self.primary.model
            if not (same_server(self.fallback.base_url, self.primary.base_url) and fb_model == plan[0][1]):
                plan.append((self.fallback, fb_model))
        return plan

    def close(self) -> None:
        for ep in (self.primary, self.fallback):
            if ep is not None:
                ep.close()


def request_kwargs(ep: Endpoint, model: str, messages: list[dict], params: dict) -> dict[str, Any]:
    """The chat-completions arguments of one request (response_format only where the server takes it)."""
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
