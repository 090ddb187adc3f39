"""The OpenAI-compatible routes on a live app (127.0.0.1), driven by the official `openai` client:
/v1/models lists the indexes; /v1/chat/completions answers streamed and not, with citations as
links, from the agent when an LLM is configured (tests/openai_server.py as the LLM) and from the
extractive answer when not; retrieval settings ride in the extra body; refusals are OpenAI's
error statuses."""
from __future__ import annotations

import re

import httpx2
import openai
import pytest
from app_server import app_settings
from live_clients import start_served

QUESTION = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "How do I create an application with ACE Tools?"}]
LINK = "](https://github.com/arkui-x/docs/blob/master/"


@pytest.fixture
def live(tmp_path, fixture_index):
    app, _ = start_served(app_settings(tmp_path, fixture_index))
    yield app
    app.stop()


def _client(app) -> openai.OpenAI:
    return openai.OpenAI(base_url=app.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _streamed(client, **kw) -> tuple[str, list]:
    chunks = list(client.chat.completions.create(stream=True, **kw))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


def test_models_are_the_indexes(live):
    client = _client(live)
    assert [m.id for m in client.models.list()] == ["app"]
    assert client.models.retrieve("app").id == "app"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("other")


def test_without_an_llm_the_context_with_its_sources_as_links(live):
    client = _client(live)
    done = client.chat.completions.create(model="app", messages=QUESTION)
    text = done.choices[0].message.content
    assert "**Read more**" in text and LINK + "en/application-dev" in text and "chunk-" not in text
    assert done.model_extra["answerable"] is True and done.model_extra["components"][0]["type"] == "answer"
    assert done.choices[0].finish_reason == "stop" and done.model == "app" and done.usage.completion_tokens > 0
    citations = done.model_extra["citations"]
    assert citations and all(c.startswith("https://github.com/arkui-x/docs/blob/master/") for c in citations)
    streamed, chunks = _streamed(client, model="app", messages=QUESTION)
    assert streamed == text  # the same answer, in deltas
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["citations"] == citations
    held = done.model_extra["docs_version"]  # what the answer comes from (no sync: no commit)
    assert held["pages"] == 11 and held["indexed_at"] and held["commit"] is None
    assert chunks[-1].model_extra["docs_version"] == held


def test_with_an_llm_the_agents_answer_cites_with_links(tmp_path, fixture_index, openai_server_factory):
    llm = openai_server_factory(lambda r: "DONE" if r.get("tools") else "Run `ace create` [1].")
    app, _ = start_served(app_settings(tmp_path, fixture_index, llm_base_url=llm.url + "/v1", llm_model="m",
                                       llm_timeout_s=5, llm_backoff_s=0.01))
    try:
        client = _client(app)
        done = client.chat.completions.create(model="app", messages=QUESTION)
        text = done.choices[0].message.content
        streamed, _ = _streamed(client, model="app", messages=[
            {"role": "user", "content": "What is ACE Tools?"}, {"role": "assistant", "content": "A CLI."},
            {"role": "user", "content": [{"type": "text", "text": "How do I create an app with it?"}]}])
    finally:
        app.stop()
    for answer in (text, streamed):
        assert answer.startswith("Run `ace create` [1].") and "**References**" in answer
        assert "\n[1] [" in answer and LINK in answer and "**Sources**" not in answer
    assert done.model_extra["citations"][0].startswith("https://github.com/arkui-x/docs/blob/master/")
    # the front-end's system prompt is not the docs' question; the user's turns reach the agent
    asked = [r["json"] for r in llm.chat_requests()]
    assert not any("You are a helpful assistant." in str(r["messages"]) for r in asked)
    assert any("What is ACE Tools?" in str(r["messages"]) for r in asked)


def test_retrieval_settings_ride_in_the_extra_body(live):
    client = _client(live)
    one = client.chat.completions.create(model="app", messages=QUESTION,
                                         extra_body={"retrieval_config": {"final_chunk_k": 1}})
    three = client.chat.completions.create(model="app", messages=QUESTION,
                                           extra_body={"retrieval_config": {"final_chunk_k": 3}})
    # each retrieved section once under "Read more"
    assert len(re.findall(r"^\[\d+\] \[", one.choices[0].message.content, re.M)) == 1
    assert len(re.findall(r"^\[\d+\] \[", three.choices[0].message.content, re.M)) == 3
    with pytest.raises(openai.UnprocessableEntityError, match="final_chunk_k"):
        client.chat.completions.create(model="app", messages=QUESTION,
                                       extra_body={"retrieval_config": {"final_chunk_k": 10 ** 6}})


def test_refusals_are_openai_errors(live):
    client = _client(live)
    with pytest.raises(openai.NotFoundError, match="no index named"):
        client.chat.completions.create(model="gpt-4o", messages=QUESTION)
    with pytest.raises(openai.UnprocessableEntityError, match="characters"):
        client.chat.completions.create(model="app", messages=[{"role": "user", "content": "x" * 2001}])
    with pytest.raises(openai.UnprocessableEntityError, match="empty query"):  # no user turn last
        client.chat.completions.create(model="app", messages=[{"role": "assistant", "content": "hi"}])
    with pytest.raises(openai.UnprocessableEntityError, match="empty query"):
        client.chat.completions.create(model="app", messages=QUESTION[:1], stream=True)
    big = [{"role": "user", "content": "y" * 70_000}]
    r = httpx2.post(live.url + "/v1/chat/completions", json={"model": "app", "messages": big})
    assert r.status_code == 413  # the body limit of /retrieve


def test_a_read_only_demo_answers_and_its_rate_limit_holds_on_the_new_routes(tmp_path, fixture_index):
    """Admin secret set (a public Space): /v1 answers without it (it writes nothing), and the
    per-client rate limit of the REST routes counts /v1/chat/completions and /mcp too."""
    app, _ = start_served(app_settings(tmp_path, fixture_index, admin_secret="s3cret", rate_limit="3/minute"))
    try:
        client = _client(app)
        assert client.chat.completions.create(model="app", messages=QUESTION).choices[0].message.content
        mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"accept": "application/json, text/event-stream"}
        assert httpx2.post(app.url + "/mcp", json=mcp, headers=accept).status_code == 200
        assert httpx2.post(app.url + "/retrieve", json={"query": "ace"}).status_code == 200
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="app", messages=QUESTION)
        assert httpx2.post(app.url + "/mcp", json=mcp, headers=accept).status_code == 429
    finally:
        app.stop()
