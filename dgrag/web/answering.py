"""The app's answers over one index: a request checked once, the retriever, the agent's events.

Every route that answers (REST, stream, /v1, MCP, the UI) comes through here, so each keeps the
same checks and each answer names the docs it came from.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Callable, Iterator

from ..config import RetrievalConfig, Settings
from ..core import chat_to_api
from ..errors import Cancelled, ConfigError
from .asklog import new_answer_id
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
                    cancel: threading.Event | None = None, channel: str = "rest",
                    answer_id: str | None = None) -> Iterator[dict]:
        """The answer's events (dgrag.answer); `cancel` set: it stops at its next step."""
        query, config = self.admit(query, config)
        yield from self._answer(query, history, use_rag, use_llm, config, cancel, channel, answer_id)

    def _answer(self, query: str, history: list[dict] | None, use_rag: bool, use_llm: bool,
                config: RetrievalConfig, cancel: threading.Event | None, channel: str = "rest",
                answer_id: str | None = None) -> Iterator[dict]:
        """An admitted request's answer events; every answer (REST, stream, /v1, MCP, UI) names
        the docs it came from, and is logged here, once, whatever the channel ('chat', 'widget',
        'rest', 'v1', 'mcp'): its `done` event carries its `answer_id` (also in `meta`), which
        feedback names."""
        answer_id = answer_id or new_answer_id()
        asked_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        results = []
        for ev in self.answerer(use_llm).chat(query, history or [], config, use_rag=use_rag, cancel=cancel):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                version = self.index.docs_version()
                meta = {**ev.get("meta", {}), "docs_version": version, "answer_id": answer_id}
                self.index.log.record(answer_id, **_logged(query, results, ev["answer"], meta, channel, asked_at),
                                      index_state=json.dumps(version, sort_keys=True))
                ev = {**ev, "answer_id": answer_id, "meta": meta}
            yield ev

    def chat(self, query: str, use_rag: bool = True, use_llm: bool = True, config: dict | None = None,
             history: list[dict] | None = None, cancel: threading.Event | None = None,
             channel: str = "rest") -> dict:
        """The seed's /chat response, plus `meta` (the agent's rounds, citations, tokens, images);
        `cancel` set: Cancelled at the answer's next step."""
        t0 = time.perf_counter()
        query, config = self.admit(query, config)  # the response echoes the query as answered
        results, answer, meta = [], "", {}
        for ev in self._answer(query, history, use_rag, use_llm, config, cancel, channel):
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                answer, meta = ev["answer"], ev.get("meta", {})
        Cancelled.check(cancel)  # an answer cut short is no answer
        return {**chat_to_api(query, results, answer, time.perf_counter() - t0), "meta": meta,
                "answer_id": meta.get("answer_id"), "components": meta.get("components", [])}


def _logged(query: str, results: list, answer: str, meta: dict, channel: str, asked_at: str) -> dict:
    """One answer as the log keeps it: the retrieved section ids best first (the question's own
    search first, then the agent's further ones), the confidence of the question's search, and
    `unanswered` where the docs did not seem to cover it or nothing was found."""
    from ..core import language_of

    sections = list(dict.fromkeys(ref.id for res in results for ref in res.chunks))
    return {"channel": channel, "question": query, "language": language_of(query), "sections": sections,
            "confidence": meta.get("confidence"), "asked_at": asked_at, "answer_text": answer,
            "unanswered": meta.get("answerable") is False or not sections}
