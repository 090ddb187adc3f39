"""The chat LLM of the configuration: one client per configuration, kept (the agent, the final
rerank and the answer evaluation share it)."""
from __future__ import annotations

import threading

from ..config import Settings

_CHAT_LLMS: dict[tuple, object] = {}
_CHAT_LLMS_LOCK = threading.Lock()


def chat_llm(settings: Settings, cache=None):
    """The chat LLM (chat_* settings, else the llm_* ones), or None when none is configured.
    One client per configuration, kept: it is thread-safe, and building one (and its
    connection pool) per question costs tens of milliseconds and a new connection."""
    from .llm import LLM

    if not settings.chat_configured:  # Settings decides, in one place
        return None
    base = settings.chat_base_url or settings.llm_base_url
    model = settings.chat_model or settings.llm_model
    kw = dict(timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries, backoff_s=settings.llm_backoff_s,
              max_tokens=settings.max_new_tokens, temperature=settings.temperature)
    if cache is not None:
        return LLM(base, model, settings.llm_api_key, cache=cache, **kw)
    key = (base, model, settings.llm_api_key, *sorted(kw.items()))
    with _CHAT_LLMS_LOCK:
        if key not in _CHAT_LLMS:
            _CHAT_LLMS[key] = LLM(base, model, settings.llm_api_key, **kw)
        return _CHAT_LLMS[key]
