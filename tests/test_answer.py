"""The agent layer against a loopback chat model: rewrite, retrieval as a tool (two calls in one
turn), a streamed answer that carries [n] citations; and the retrieval-only answer with no LLM.
(The multi-round loop, images and the JSON fallback are in test_agent_loop.py.)"""
from __future__ import annotations

import json

import pytest

from dgrag.answer import Answerer
from dgrag.backends.llm import LLM
from dgrag.config import Settings
from dgrag.retrieve.retriever import Retriever


def chat_model(request: dict):
    last = request["messages"][-1]["content"]
    if request.get("tools"):
        return {"tool_calls": [{"name": "retrieve", "arguments": {"query": "ACE Tools create an application"}},
                               {"name": "retrieve", "arguments": {"query": "ACE Tools 应用运行"}}]}
    if "standalone" in json.dumps(request["messages"]):
        return "How do I run an application created with ACE Tools?"
    assert "[1] chunk · " in str(last)
    return "Run `ace run` in the project folder [1]."


@pytest.fixture
def answerer(fixture_index, embedder, openai_server_factory):
    server = openai_server_factory(chat_model)
    settings = Settings(db_path=fixture_index[0].db_path, llm_base_url=server.url + "/v1", llm_model="chat",
                        llm_timeout_s=5, llm_backoff_s=0.01)
    llm = LLM.from_settings(settings)
    return Answerer(settings, Retriever(settings, embedder=embedder), llm=llm), server


def test_follow_up_is_rewritten_retrieval_is_a_tool_and_the_answer_cites(answerer):
    agent, server = answerer
    history = [{"role": "user", "content": "How do I create an app with ACE Tools?"},
               {"role": "assistant", "content": "Use `ace create demo`."}]
    events = list(agent.chat("And how do I run it?", history))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "rewrite" and "ACE Tools" in events[0]["query"]
    retrievals = [e for e in events if e["type"] == "retrieval"]
    assert [r["query"] for r in retrievals] == ["ACE Tools create an application", "ACE Tools 应用运行"]
    assert kinds.index("retrieval") < kinds.index("text") and kinds[-1] == "done"
    answer = events[-1]["answer"]
    assert "ace run" in answer and "folder [1]." in answer and events[-1]["meta"]["citations"]["cited"] == [1]
    final = server.chat_requests()[-1]["json"]
    assert final["stream"] is True and "[1] chunk · " in str(final["messages"][-1]["content"])
    # the same two queries asked again find nothing new to search: two retrievals in all
    assert len(retrievals) == 2 and events[-1]["meta"]["rounds"] == 1


def test_without_an_llm_the_context_is_the_answer(fixture_index, embedder):
    settings = Settings(db_path=fixture_index[0].db_path)
    agent = Answerer(settings, Retriever(settings, embedder=embedder), llm=None)
    events = list(agent.chat("如何创建 ArkTS 页面？"))
    answer = events[-1]["answer"]
    assert "[1]" in answer and "**延伸阅读**" in answer and "chunk-" not in answer  # cited sentences, no ids
