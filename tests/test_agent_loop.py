"""The answering agent through the real code path: the REST stream on a live server, the real
retriever over the fixture index, and a scripted chat model behind the loopback OpenAI server.

The scripted model searches twice with different queries, then answers citing a reference that
does not exist; it rejects image input once; it refuses tool calls (the JSON fallback)."""
from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from app_server import free_port
from dgrag.answer import Answerer, ContextBook, check_citations
from dgrag.config import Settings
from dgrag.core import Reference, RetrievalResult
from dgrag.retrieve.retriever import Retriever

Q1, Q2 = "ACE Tools create an application", "run the application on a device"


class RecordingRetriever(Retriever):
    """The real retriever, remembering every query that reached it."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.queries: list[str] = []

    def search(self, query, overrides=None):
        self.queries.append(query)
        return super().search(query, overrides)


def _tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def two_searches(request: dict):
    """Search for Q1, then (having read its results) for Q2, then answer, citing [42] too."""
    if request.get("tools"):
        seen = len(_tool_messages(request))
        if seen < 2:
            return {"tool_calls": [{"name": "retrieve", "arguments": {"query": (Q1, Q2)[seen]}}]}
        return "DONE"
    return "Create the project with ACE Tools [1], then run it [2]. More in [42].\n\n```ts\nlet a = b[42]\n```"


def _settings(fixture_index, server, **kw) -> Settings:
    return Settings(db_path=fixture_index[0].db_path, llm_base_url=server.base_url, llm_model="chat",
                    llm_timeout_s=10, llm_max_retries=0, llm_backoff_s=0.01, **kw)


@pytest.fixture
def live_api(fixture_index, embedder, openai_server_factory):
    """The REST API (no UI) on 127.0.0.1 with the scripted model, over a recording retriever."""
    import uvicorn

    from dgrag.web.api import build_api
    from dgrag.web.service import Service

    server = openai_server_factory(two_searches)
    service = Service(_settings(fixture_index, server))
    service.answers._retriever = RecordingRetriever(service.settings, service.handle, embedder=embedder)
    port = free_port()
    web = uvicorn.Server(uvicorn.Config(build_api(service), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not web.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", service.retriever, server
    web.should_exit = True
    thread.join(timeout=10)


def _stream(url: str, body: dict) -> list[dict]:
    req = urllib.request.Request(url + "/chat/stream", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return [json.loads(line) for line in resp.read().decode().splitlines() if line.strip()]


def test_two_search_rounds_stream_and_the_dead_citation_is_removed(live_api):
    url, retriever, server = live_api
    events = _stream(url, {"query": "How do I create and run an app with ACE Tools?"})
    kinds = [e["type"] for e in events]
    rounds = [e for e in events if e["type"] == "round"]
    assert [(r["round"], r["query"]) for r in rounds] == [(1, Q1), (2, Q2)]
    assert retriever.queries == [Q1, Q2]  # the second query, chosen after reading the first results
    assert kinds.index("references") < kinds.index("round") < kinds.index("text") and kinds[-1] == "done"
    assert all(r["counts"]["chunks"] > 0 and r["timing"]["retrieve_s"] > 0 for r in rounds)
    # the model saw each search's results once: round 2 shows only what round 1 had not
    decisions = [r["json"] for r in server.chat_requests() if r["json"].get("tools")]
    assert len(decisions) == 3 and len(_tool_messages(decisions[1])) == 1
    first, second = (m["content"] for m in _tool_messages(decisions[2]))
    sources = [{line for line in text.splitlines() if line.startswith("  Source: ")} for text in (first, second)]
    assert sources[0] and not sources[0] & sources[1]
    assert rounds[1]["counts"]["new"] + rounds[1]["counts"]["repeated"] == sum(
        rounds[1]["counts"][k] for k in ("chunks", "codes", "tables", "images"))
    # the answer: [42] is not a reference, so it is removed and counted; code is left alone
    done = events[-1]
    answer, meta = done["llm_response"], done["meta"]
    assert "[1]" in answer and "[2]" in answer and "More in." in answer and "let a = b[42]" in answer
    assert meta["citations"]["removed"] == 1 and meta["citations"]["removed_numbers"] == [42]
    assert meta["citations"]["cited"] == [1, 2] and meta["rounds"] == 2 and meta["queries"] == [Q1, Q2]
    streamed = "".join(e["text"] for e in events if e["type"] == "text")
    assert streamed == answer and "More in [42]" not in streamed
    refs = {r["n"]: r for r in meta["references"]}
    assert f"[1] [{refs[1]['breadcrumb']}]({refs[1]['source_url']})" in answer  # the numbered list below
    final = [r["json"] for r in server.chat_requests() if r["json"].get("stream")][-1]
    assert "[1] chunk · " in str(final["messages"][-1]["content"]) and meta["tokens"]["total"] > 0


def test_image_parts_reach_the_model_and_a_refusal_is_retried_without_them(fixture_index, embedder,
                                                                          openai_server_factory):
    def model(request):
        if request.get("tools"):
            return "DONE"
        content = request["messages"][-1]["content"]
        if isinstance(content, list) and any(p["type"] == "image_url" for p in content):
            return {"http_status": 400, "error": "this model does not support image input"}
        return "The new page dialog is shown in the screenshot [1]."

    server = openai_server_factory(model)
    settings = _settings(fixture_index, server, chat_images="on", chat_max_images=2)
    agent = Answerer(settings, Retriever(settings, embedder=embedder))
    events = list(agent.chat("new page dialog screenshot", retrieval_config={"final_image_k": 3}))
    finals = [r["json"] for r in server.chat_requests() if r["json"].get("stream")]
    assert len(finals) == 2
    with_images, without = finals[0]["messages"][-1]["content"], finals[1]["messages"][-1]["content"]
    images = [p for p in with_images if p["type"] == "image_url"]
    assert len(images) == 2 and all(p["image_url"]["url"].startswith("data:image/") for p in images)
    assert any(p["type"] == "text" and p["text"].startswith("Image [") and "/images/" in p["text"]
               for p in with_images)
    assert isinstance(without, str) and without == with_images[0]["text"]  # the same prompt, no images
    meta = events[-1]["meta"]
    assert "does not support image input" in meta["images"]["refused"] and meta["images"]["sent"] == 0
    assert events[-1]["answer"].startswith("The new page dialog is shown in the screenshot [1].")
    # refused with a 4xx: this endpoint and model are not sent images again (no second failed request)
    again = list(agent.chat("new page dialog screenshot", retrieval_config={"final_image_k": 3}))[-1]["meta"]
    with_parts = [r for r in server.chat_requests() if isinstance(r["json"]["messages"][-1]["content"], list)]
    assert again["images"]["refused"].startswith("refused earlier: ") and len(with_parts) == 1


def test_images_sent_when_accepted_and_bounded(fixture_index, embedder, openai_server_factory):
    server = openai_server_factory(lambda r: "DONE" if r.get("tools") else "Shown [1].")
    settings = _settings(fixture_index, server, chat_images="on", chat_max_images=1, chat_image_max_px=32)
    agent = Answerer(settings, Retriever(settings, embedder=embedder))
    meta = list(agent.chat("new page dialog screenshot", retrieval_config={"final_image_k": 3}))[-1]["meta"]
    final = [r["json"] for r in server.chat_requests() if r["json"].get("stream")][-1]
    images = [p for p in final["messages"][-1]["content"] if p["type"] == "image_url"]
    assert meta["images"] == {"sent": 1, "skipped": [], "refused": None} and len(images) == 1
    import base64
    import io

    from PIL import Image

    data = base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1])
    assert max(Image.open(io.BytesIO(data)).size) <= 32  # scaled down to the bound


def test_images_follow_the_caption_models_by_default():
    from dgrag.answer.images import wants_images

    assert wants_images(Settings(llm_base_url="http://h/v1", llm_model="qwen-vl"))
    assert not wants_images(Settings(llm_base_url="http://h/v1", llm_model="qwen", llm_vision_model="qwen-vl"))
    assert wants_images(Settings(llm_base_url="http://h/v1", llm_model="qwen", llm_vision_model="qwen-vl",
                                 chat_model="qwen-vl"))
    assert not wants_images(Settings(llm_base_url="http://h/v1", llm_model="qwen-vl", chat_images="off"))


def _chat(fixture_index, embedder, server, question: str):
    """One answer by the agent over the loopback model: (the recording retriever, the events,
    the round events)."""
    settings = _settings(fixture_index, server)
    retriever = RecordingRetriever(settings, embedder=embedder)
    events = list(Answerer(settings, retriever).chat(question))
    return retriever, events, [e for e in events if e["type"] == "round"]


def test_a_model_without_tool_calls_searches_through_json_replies(fixture_index, embedder, openai_server_factory):
    def model(request):
        if request.get("tools"):
            return {"http_status": 400, "error": "tool calls are not supported by this server"}
        if request.get("response_format"):
            searched = request["messages"][-1]["content"].count("\nSearch ")
            return json.dumps({"retrieve": Q2} if searched == 1 else {"done": True} if searched else {"retrieve": Q1})
        return "Run it [1]."

    server = openai_server_factory(model)
    retriever, events, rounds = _chat(fixture_index, embedder, server, "How do I create and run an app with ACE Tools?")
    assert [(r["round"], r["query"], r["mode"]) for r in rounds] == [(1, Q1, "json"), (2, Q2, "json")]
    assert retriever.queries == [Q1, Q2]
    meta = events[-1]["meta"]
    assert meta["mode"] == "json" and any("tool calls refused" in n for n in meta["notes"])
    assert sum(bool(r["json"].get("tools")) for r in server.chat_requests()) == 1  # asked with tools once only


def test_context_stays_within_the_budget_lowest_scores_trimmed_first(fixture_index, embedder, openai_server_factory):
    server = openai_server_factory(lambda r: "DONE" if r.get("tools") else "Answer [1].")
    settings = _settings(fixture_index, server, chat_context_tokens=600, chat_images="off")
    events = list(Answerer(settings, Retriever(settings, embedder=embedder)).chat("ACE Tools"))
    meta = events[-1]["meta"]
    assert meta["trimmed"] > 0 and 0 < meta["context_tokens"] <= 600
    result = next(e["result"] for e in events if e["type"] == "retrieval")
    found = [ref.to_api() for ref in result.all_references()]
    kept = {r["id"] for r in meta["references"]}
    assert max(it["score"] for it in found if it["id"] not in kept) <= min(r["score"] for r in meta["references"])
    final = [r["json"] for r in server.chat_requests() if r["json"].get("stream")][-1]["messages"][-1]["content"]
    assert final.count(" · ") == len(kept)  # only what is kept reaches the model


def test_the_book_trims_the_lowest_scored_and_never_repeats():
    def item(i, score, n=200):
        return Reference(f"c{i}", "chunk", score, f"P / {i}", "u", text="w " * n)

    def found(*refs):
        return RetrievalResult("q", "dense", {"chunks": refs}, "", {"rag_total": 0.0})

    book = ContextBook(300)
    first = book.add(found(item(1, 0.9), item(2, 0.2)), 1)
    assert [e.item["id"] for e in first.new] == ["c1"] and book.trimmed == ["c2"]
    again = book.add(found(item(1, 0.9), item(3, 0.95, 50)), 2)
    assert again.repeated == 1 and [e.item["id"] for e in again.new] == ["c3"]
    assert [r["id"] for r in book.references()] == ["c1", "c3"] and book.tokens() <= 300
    lone = ContextBook(10)
    lone.add(found(item(1, 0.5)), 1)
    assert len(lone.live()) == 1  # one item is always kept


def test_citations_outside_code_only():
    text, f = check_citations("A [1], B [3, 9] and C [9].\n`x[9]`\n```py\ny = z[9]\n```\n", {1, 3})
    assert text == "A [1], B [3] and C.\n`x[9]`\n```py\ny = z[9]\n```\n"
    assert f.removed == [9, 9] and f.cited == [1, 3]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_agent_prompts_render_and_their_json_replies_parse(lang):
    from dgrag.answer.planner import queries_from_json
    from dgrag.prompts import placeholders, render

    assert placeholders("agent", lang) == placeholders("agent_json", lang) == {"max_rounds"}
    assert placeholders("answer_short", lang) == set()
    text = render("agent_json", lang, max_rounds=3)
    assert "3" in text and '{"done": true}' in text
    example = text[text.index('{"retrieve": ['):].split("}", 1)[0] + "}"
    assert len(queries_from_json(example)) == 2 and queries_from_json('{"done": true}') == []


def test_the_chat_ui_shows_each_search(tmp_path, fixture_index, openai_server_factory):
    from gradio_client import Client

    from app_server import app_settings, start_app

    server = openai_server_factory(two_searches)
    app = start_app(app_settings(tmp_path, fixture_index, llm_base_url=server.base_url, llm_model="chat",
                                 llm_timeout_s=10, llm_max_retries=0, chat_images="off"))
    try:
        client = Client(app.url + "/", verbose=False)
        history, refs, _ = client.predict("How do I create and run an app with ACE Tools?", [], False, "diffusion",
                                          10, 2, 2, 2, 50, 100, 2.0, 12000, 0.5, api_name="/chat")
    finally:
        app.stop()
    answer = history[-1]["content"]
    answer = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    assert f"Searched for “{Q1}” (" in answer and f", then for “{Q2}” (" in answer
    assert "Create the project with ACE Tools [1]" in answer and "[42]" not in answer.split("```")[0]


def test_a_search_the_model_writes_too_long_is_skipped_and_the_answer_goes_on(fixture_index, embedder,
                                                                               openai_server_factory):
    pasted = "ERROR at line 42 " * 200  # 3,400 characters: over max_query_chars

    def model(request):
        if request.get("tools"):
            seen = len(_tool_messages(request))
            if seen < 2:
                return {"tool_calls": [{"name": "retrieve", "arguments": {"query": (pasted, Q1)[seen]}}]}
            return "DONE"
        return "Create it with ACE Tools [1]."

    retriever, events, rounds = _chat(fixture_index, embedder, openai_server_factory(model),
                                      "How do I create an app with ACE Tools?")
    assert "error" in rounds[0] and "characters" in rounds[0]["error"] and rounds[0]["counts"]["new"] == 0
    assert rounds[1]["query"] == Q1 and rounds[1]["counts"]["new"] > 0 and "error" not in rounds[1]
    assert events[-1]["type"] == "done" and any("skipped" in n for n in events[-1]["meta"]["notes"])
    assert "".join(e["text"] for e in events if e["type"] == "text").startswith("Create it")
