"""The app's answers over one index: a request checked once, the retriever, the agent's events.

Every route that answers (REST, stream, /v1, MCP, the UI) comes through here, so each keeps the
same checks and each answer names the docs it came from.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

from ..config import RetrievalConfig, Settings
from ..core import chat_to_api
from ..errors import Cancelled, ConfigError
from .index_keeper import IndexKeeper


class Answering:
    def __init__(self, settings: Settings, index: IndexKeeper, ready: Callable[[], None]):
        self.settings = settings
        self.index = index
        self.ready = ready  # raises IndexNotReady while there is nothing to answer from (builds.py)
        self._retriever = None
        self._init_lock = threading.Lock()

    @property
    def retriever(self):
        if self._retriever is None:
            with self._init_lock:
                if self._retriever is None:
                    from ..retrieve.retriever import Retriever

                    self._retriever = Retriever(self.settings, self.index.handle)
        return self._retriever

    def check_request(self, query, config: dict | RetrievalConfig | None = None) -> tuple[str, RetrievalConfig]:
        """The query as it will be answered and the request's whole retrieval config; a query too
        long or empty, or a retrieval_config with an unknown or out-of-range value, is refused here
        (QueryRejected / ConfigError), before any work. The edge calls it once and passes both
        down: values it returned pass again (and through the retriever) unchecked."""
        from ..retrieve.retriever import check_query

        query = check_query(query, self.settings)
        if isinstance(config, RetrievalConfig):
            return query, config
        if config is not None and not isinstance(config, dict):
            raise ConfigError("retrieval_config must be an object")
        return query, self.settings.retrieval.merged(config)

    def admit(self, query, config: dict | RetrievalConfig | None = None) -> tuple[str, RetrievalConfig]:
        """A request let in, in the one order every route keeps: its values checked first
        (`check_request`: a bad query is a 422 even during the first build), then the index's
        readiness (IndexNotReady, a 503). What it returns passes down unchecked."""
        query, config = self.check_request(query, config)
        self.ready()
        return query, config

    def retrieve(self, query: str, config: dict | RetrievalConfig | None = None) -> dict:
        query, config = self.admit(query, config)  # before the retriever: it loads the index
        return self.retriever.retrieve(query, config)

    def answerer(self, use_llm: bool = True):
        from ..answer import Answerer

        return Answerer(self.settings, self.retriever, llm="auto" if use_llm else None)

    def chat_events(self, query: str, history: list[dict] | None = None, use_rag: bool = True,
                    use_llm: bool = True, config: dict | RetrievalConfig | None = None,
                    cancel: threading.Event | None = None) -> Iterator[dict]:
        """The answer's events (dgrag.answer); `cancel` set: it stops at its next step."""
        query, config = self.admit(query, config)
        yield from self._answer(query, history, use_rag, use_llm, config, cancel)

    def _answer(self, query: str, history: list[dict] | None, use_rag: bool, use_llm: bool,
                config: RetrievalConfig, cancel: threading.Event | None) -> Iterator[dict]:
        """An admitted request's answer events; every answer (REST, stream, /v1, MCP, UI) names
        the docs it came from."""
        for ev in self.answerer(use_llm).chat(query, history or [], config, use_rag=use_rag, cancel=cancel):
            if ev["type"] == "done":
                ev = {**ev, "meta": {**ev.get("meta", {}), "docs_version": self.index.docs_version()}}
            yield ev

    def chat(self, query: str, use_rag: bool = True, use_llm: bool = True, config: dict | None = None,
             history: list[dict] | None = None, cancel: threading.Event | None = None) -> dict:
        """The seed's /chat response, plus `meta` (the agent's rounds, citations, tokens, images);
        `cancel` set: Cancelled at the answer's next step."""
        t0 = time.perf_counter()
        query, config = self.admit(query, config)  # the response echoes the query as answered
        results, answer, meta = [], "", {}
        for ev in self._answer(query, history, use_rag, use_llm, config, cancel):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                answer, meta = ev["answer"], ev.get("meta", {})
        Cancelled.check(cancel)  # an answer cut short is no answer
        return {**chat_to_api(query, results, answer, time.perf_counter() - t0), "meta": meta,
                "components": meta.get("components", [])}
