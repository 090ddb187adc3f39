"""A request is checked once, at the edge, and the checked values are passed down: the query
(CheckedQuery) and the whole retrieval config (RetrievalConfig) are not checked again by the
service's answering paths or by the retriever (they were checked 2 to 4 times a request)."""
from __future__ import annotations

import dataclasses

import pytest

import dgrag.retrieve.retriever as retriever_module
from dgrag.config import RetrievalConfig
from dgrag.errors import ConfigError, QueryRejected
from dgrag.retrieve.retriever import CheckedQuery, check_query
from dgrag.web.service import Service


@pytest.fixture
def counted(indexed, monkeypatch):
    """The service, and a count of the checks that did work: query estimates and config merges."""
    counts = {"query": 0, "config": 0}
    estimate, merged = retriever_module.estimate_tokens, RetrievalConfig.merged

    def counting_estimate(text):
        counts["query"] += 1
        return estimate(text)

    def counting_merged(self, overrides):
        counts["config"] += 1
        return merged(self, overrides)

    monkeypatch.setattr(retriever_module, "estimate_tokens", counting_estimate)
    monkeypatch.setattr(RetrievalConfig, "merged", counting_merged)
    return Service(dataclasses.replace(indexed, request_timeout_s=8.0)), counts


def _once(counts) -> bool:
    seen = dict(counts)
    counts.update(query=0, config=0)
    return seen == {"query": 1, "config": 1}


def test_each_answering_path_checks_its_request_once(counted):
    service, counts = counted
    config = {"final_chunk_k": 2}
    assert service.retrieve(" ACE Tools ", config)["query"] == "ACE Tools"
    assert _once(counts)
    assert service.chat("ACE Tools", use_llm=False, config=config)["rag_chunks_count"] <= 2
    assert _once(counts)
    events = list(service.chat_events("ACE Tools", use_llm=False, config=config))  # the UI's path
    assert events[-1]["type"] == "done" and _once(counts)
    query, cfg = service.check_request("ACE Tools", config)  # /chat/stream: checked before streaming
    assert isinstance(query, CheckedQuery) and cfg.final_chunk_k == 2
    assert [e["type"] for e in service.chat_events(query, None, True, False, cfg)][-1] == "done"
    assert _once(counts)


def test_a_checked_config_is_copied_for_each_search(counted):
    """The search writes its deadline into its config: an edge's config, reused by the agent's
    rounds, must come back unchanged."""
    service, _ = counted
    query, cfg = service.check_request("ACE Tools", {"spread_time_budget_s": 10.0})
    service.retriever.search(query, cfg)  # its own copy: at most the 8 s the request has left
    assert cfg.spread_time_budget_s == 10.0


def test_only_what_was_checked_skips_the_check(counted):
    service, _ = counted
    with pytest.raises(QueryRejected):
        service.retrieve("x" * (service.settings.max_query_chars + 1))
    with pytest.raises(ConfigError):
        service.retrieve("ACE Tools", {"final_chunk_k": -1})
    with pytest.raises(ConfigError, match="an object"):
        service.retrieve("ACE Tools", ["final_chunk_k"])
    assert type(check_query(" q ", service.settings)) is CheckedQuery
    assert check_query(CheckedQuery("q"), service.settings) == "q"
