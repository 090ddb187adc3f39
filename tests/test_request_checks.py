"""A request is checked once, at the edge, and the checked values are passed down: the query
(CheckedQuery) and the whole retrieval config (RetrievalConfig) are not checked again by the
service's answering paths or by the retriever (they were checked 2 to 4 times a request)."""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

import dgrag.retrieve.retriever as retriever_module
from dgrag.config import RetrievalConfig, Settings
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
    query, cfg = service.check_request("ACE Tools", {"diffusion_time_budget_s": 10.0})
    service.retriever.search(query, cfg)  # its own copy: at most the 8 s the request has left
    assert cfg.diffusion_time_budget_s == 10.0


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


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read().decode().splitlines()[0])
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_every_route_checks_the_request_before_the_index_is_ready(tmp_path):
    """During the first build, a bad query is the client's error (422) on every route, and a good
    one waits for the index (503): the values first, then readiness, the same order everywhere."""
    import uvicorn

    from app_server import free_port
    from conftest import FIXTURE_DOCS
    from dgrag.web.api import build_api

    service = Service(Settings(db_path=tmp_path / "demo.db", docs_root=FIXTURE_DOCS, embedder="hash"))
    service.build, service.first_start = service.demo_build(), True  # as start_demo_build, not started
    server = uvicorn.Server(uvicorn.Config(build_api(service), host="127.0.0.1", port=free_port(),
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{server.config.port}"
    too_long = "x" * (service.settings.max_query_chars + 1)
    routes = {"/retrieve": lambda q: {"query": q}, "/chat": lambda q: {"query": q, "use_llm": False},
              "/chat/stream": lambda q: {"query": q, "use_llm": False},
              "/v1/chat/completions": lambda q: {"model": "demo", "messages": [{"role": "user", "content": q}]}}
    try:
        for path, body in routes.items():
            for bad in ("  ", too_long):
                status, out = _post(url + path, body(bad))
                assert status == 422, (path, status, out)
            status, out = _post(url + path, {**body("ACE Tools"), "retrieval_config": {"final_chunk_k": -1}})
            assert status == 422 and "final_chunk_k" in json.dumps(out), (path, out)
            if path in ("/retrieve", "/chat", "/chat/stream"):  # a misspelt field is refused, not ignored
                status, out = _post(url + path, {**body("ACE Tools"), "config": {"final_chunk_k": 3}})
                assert status == 422 and "config" in json.dumps(out), (path, out)
            status, out = _post(url + path, body("ACE Tools"))
            assert status == 503 and "being built" in json.dumps(out), (path, status, out)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
