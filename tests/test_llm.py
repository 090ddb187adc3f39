"""The LLM backend against a real HTTP server speaking the OpenAI protocol."""
from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest

from dgrag.backends.llm import LLM, LLMCache, MemoryCache, cache_key, image_part, parse_json
from dgrag.config import Settings
from dgrag.errors import BackendError, LLMError

try:
    from openai_fixtures import TEST_API_KEY, llm_settings, openai_server, openai_server_factory  # noqa: F401
    from openai_server import start_server
except ImportError:  # tests/ imported as a package
    from tests.openai_fixtures import TEST_API_KEY, llm_settings, openai_server, openai_server_factory  # noqa: F401
    from tests.openai_server import start_server

SECRET = TEST_API_KEY
TOOLS = [{"type": "function", "function": {"name": "search", "description": "search the docs",
                                            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def make_settings(server, **kw) -> Settings:
    base = dict(llm_base_url=server.url + "/v1", llm_model="test-model", llm_api_key=SECRET,
                llm_timeout_s=0.5, llm_backoff_s=0.01)
    base.update(kw)
    return Settings(**base)


def msgs(text: str = "hello") -> list[dict]:
    return [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]


# --- helpers --------------------------------------------------------------------------------
def test_parse_json_tolerant():
    assert parse_json('{"a": 1}') == {"a": 1}
    assert parse_json('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    assert parse_json('Sure! Here it is:\n```\n[{"x": 1}]\n```\nanything else?') == [{"x": 1}]
    assert parse_json('The answer is {"a": {"b": 2}} as requested.') == {"a": {"b": 2}}
    assert parse_json('<think>hmm {"no": </think>{"ok": true}') == {"ok": True}
    assert parse_json('[note] {"a": 1}') == {"a": 1}
    assert parse_json('{"a": 1,}') == {"a": 1}
    for bad in ('{"a": [1, 2', "no json here", "", "```json\n{\"a\": \n```"):
        with pytest.raises(ValueError):
            parse_json(bad)


def test_cache_key_and_image_part():
    assert isinstance(MemoryCache(), LLMCache)
    m = msgs()
    p = {"temperature": 0.0, "max_tokens": 10, "response_format": None, "tools": None}
    k = cache_key("m", m, p)
    assert len(k) == 64 and k == cache_key("m", [dict(x) for x in m], dict(p))
    assert k == cache_key("m", m, {"temperature": 0, "max_tokens": 10})  # None dropped, 0 == 0.0
    assert k != cache_key("m2", m, p)
    assert k != cache_key("m", m, {**p, "max_tokens": 11})
    assert k != cache_key("m", m, {**p, "response_format": {"type": "json_object"}})
    assert k != cache_key("m", m, {**p, "tools": TOOLS})
    part = image_part(b"\x89PNG...", "image/png")
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")
    with_img = [{"role": "user", "content": [{"type": "text", "text": "what?"}, part]}]
    other = [{"role": "user", "content": [{"type": "text", "text": "what?"}, image_part(b"other", "image/png")]}]
    assert cache_key("m", with_img, p) != cache_key("m", other, p)


def test_not_configured():
    llm = LLM.from_settings(Settings())
    assert not llm.configured
    with pytest.raises(LLMError):
        llm.complete("hi")
    assert issubclass(LLMError, BackendError)


# --- plain calls and cache ------------------------------------------------------------------
def test_plain_completion(openai_server, llm_settings):
    llm = LLM.from_settings(llm_settings)
    assert llm.configured
    assert llm.complete(msgs("hello there")) == "echo: hello there"
    assert llm.calls == 1 and openai_server.chat_calls == 1
    req = openai_server.chat_requests()[0]
    assert req["json"]["model"] == "test-model"
    assert req["json"]["messages"][-1]["content"] == "hello there"
    assert req["json"]["temperature"] == 0.0 and req["json"]["max_tokens"] == llm_settings.max_new_tokens
    assert "response_format" not in req["json"]
    assert req["headers"].get("authorization") == f"Bearer {SECRET}"
    # a plain string is a user message; model / max_tokens overrides reach the request
    assert llm.complete("hi", model="vision-model", max_tokens=7) == "echo: hi"
    req = openai_server.chat_requests()[-1]["json"]
    assert req["model"] == "vision-model" and req["max_tokens"] == 7
    assert SECRET not in repr(llm)


def test_cache_hit_makes_no_http_call(openai_server, llm_settings):
    cache = MemoryCache()
    first = LLM.from_settings(llm_settings, cache)
    assert first.complete(msgs()) == "echo: hello"
    assert first.complete_json(msgs("j")) == {"echo": "j"}
    assert openai_server.chat_calls == 2 and len(cache) == 2
    second = LLM.from_settings(llm_settings, cache)  # "a second run"
    assert second.complete(msgs()) == "echo: hello"
    assert second.complete_json(msgs("j")) == {"echo": "j"}
    assert second.calls == 0 and second.cache_hits == 2
    assert openai_server.chat_calls == 2
    # other parameters are another key
    second.complete(msgs(), max_tokens=5)
    assert second.calls == 1


def test_429_then_success(openai_server, llm_settings):
    openai_server.add_faults("429")
    llm = LLM.from_settings(llm_settings)
    t0 = time.monotonic()
    assert llm.complete(msgs()) == "echo: hello"
    assert time.monotonic() - t0 < 2  # Retry-After: 0 honoured
    assert openai_server.chat_calls == 2 and llm.calls == 2 and llm.retries == 1 and llm.failures == 0


def test_500s_then_fallback(openai_server_factory):
    primary = openai_server_factory(faults=["500"] * 10)
    fallback = openai_server_factory(lambda req: f"fallback answer from {req['model']}")
    settings = make_settings(primary, llm_max_retries=2, llm_fallback_base_url=fallback.url + "/v1",
                             llm_fallback_model="fb-model", llm_fallback_api_key="sk-fallback-456")
    cache = MemoryCache()
    llm = LLM.from_settings(settings, cache)
    assert llm.complete(msgs()) == "fallback answer from fb-model"
    assert primary.chat_calls == 3 and fallback.chat_calls == 1
    assert llm.calls == 4 and llm.fallbacks == 1 and llm.failures == 0
    assert llm.stats() == {"calls": 4, "cache_hits": 0, "failures": 0, "retries": 3, "fallbacks": 1}
    assert fallback.chat_requests()[0]["headers"]["authorization"] == "Bearer sk-fallback-456"
    # the fallback's answer is cached: a second run makes no HTTP call at all
    again = LLM.from_settings(settings, cache)
    assert again.complete(msgs()) == "fallback answer from fb-model"
    assert again.calls == 0 and primary.chat_calls == 3 and fallback.chat_calls == 1
    # disable_fallback: the primary's failure is final
    primary.set_faults(["500"] * 10)
    off = LLM.from_settings(make_settings(primary, llm_max_retries=1, disable_fallback=True,
                                          llm_fallback_base_url=fallback.url + "/v1", llm_fallback_model="fb"))
    with pytest.raises(LLMError, match="HTTP 500"):
        off.complete(msgs("other"))
    assert off.calls == 2 and off.failures == 1 and fallback.chat_calls == 1


def test_fallback_model_on_same_endpoint(openai_server_factory):
    def responder(req):
        return {"http_status": 404, "error": "no such model"} if req["model"] == "test-model" else "from " + req["model"]

    server = openai_server_factory(responder)
    llm = LLM.from_settings(make_settings(server, llm_fallback_model="small-model"))
    assert llm.complete(msgs()) == "from small-model"
    assert server.chat_calls == 2  # a 404 is not retried: straight to the fallback


def test_hang_retried_then_llm_error(openai_server, llm_settings):
    llm = LLM.from_settings(llm_settings)
    llm.max_retries = 1
    openai_server.add_faults("hang", None)  # one hang, then a normal answer
    assert llm.complete(msgs()) == "echo: hello"
    assert llm.calls == 2
    openai_server.add_faults("hang", "hang")
    t0 = time.monotonic()
    with pytest.raises(LLMError, match="timed out") as info:
        llm.complete(msgs("again"))
    assert time.monotonic() - t0 < 3
    assert info.value.reason == "timeout" and info.value.attempts == 2
    assert llm.failures == 1 and llm.calls == 4


def test_complete_json_retries_garbage_and_truncated(openai_server, llm_settings):
    openai_server.responder = lambda req: json.dumps({"answer": "a fairly long answer", "items": [1, 2, 3]})
    cache = MemoryCache()
    llm = LLM.from_settings(llm_settings, cache)
    openai_server.add_faults("garbage", "truncated")
    assert llm.complete_json(msgs()) == {"answer": "a fairly long answer", "items": [1, 2, 3]}
    assert llm.calls == 3 and openai_server.chat_requests()[0]["json"]["response_format"] == {"type": "json_object"}
    assert len(cache) == 1
    # always bad: LLMError after the retries, nothing cached
    openai_server.set_fault_rate(1.0, kinds=["garbage", "truncated"], seed=7)
    with pytest.raises(LLMError, match=r"^invalid JSON") as info:
        llm.complete_json(msgs("other"))
    assert info.value.attempts == llm_settings.llm_max_retries + 1
    assert len(cache) == 1 and llm.failures == 1
    # a plain completion accepts a truncated answer (finish_reason=length)
    openai_server.set_fault_rate(0.0)
    openai_server.add_faults("truncated")
    full = json.dumps({"answer": "a fairly long answer", "items": [1, 2, 3]})
    assert llm.complete(msgs("plain")) == full[: len(full) // 2]


def test_json_fences_are_accepted(openai_server, llm_settings):
    openai_server.responder = lambda req: 'Here you go:\n```json\n{"k": "v"}\n```'
    assert LLM.from_settings(llm_settings).complete_json(msgs()) == {"k": "v"}


# --- streaming and tools --------------------------------------------------------------------
def test_stream_yields_text_deltas(openai_server, llm_settings):
    openai_server.responder = lambda req: "streamed answer text"
    llm = LLM.from_settings(llm_settings)
    events = list(llm.stream(msgs()))
    assert len(events) > 1 and all(e["type"] == "text" for e in events)
    assert "".join(e["text"] for e in events) == "streamed answer text"
    assert openai_server.chat_requests()[-1]["json"]["stream"] is True
    # a 429 before the first token is retried
    openai_server.add_faults("429")
    assert "".join(e["text"] for e in llm.stream(msgs())) == "streamed answer text"
    assert openai_server.chat_calls == 3


def test_stream_cut_after_first_token_is_not_retried(openai_server, llm_settings):
    openai_server.responder = lambda req: "a longer streamed answer"
    openai_server.add_faults("cut")
    llm = LLM.from_settings(llm_settings)
    got = []
    with pytest.raises(LLMError, match="stream interrupted"):
        for ev in llm.stream(msgs()):
            got.append(ev)
    assert got and got[0]["type"] == "text"
    assert openai_server.chat_calls == 1 and llm.failures == 1


def test_tool_calls_non_streaming_and_streaming(openai_server, llm_settings):
    def responder(req):
        if req.get("tools"):
            return {"content": None, "tool_calls": [{"id": "call_1", "name": "search", "arguments": {"q": "arkui x"}}]}
        return "no tools"

    openai_server.responder = responder
    llm = LLM.from_settings(llm_settings, MemoryCache())
    out = llm.chat_with_tools(msgs(), TOOLS)
    assert out["content"] is None
    assert out["tool_calls"] == [{"id": "call_1", "name": "search", "arguments": '{"q": "arkui x"}'}]
    assert openai_server.chat_requests()[-1]["json"]["tools"] == TOOLS
    follow = LLM.assistant_message(out)
    assert follow["tool_calls"][0]["function"]["name"] == "search"
    assert LLM.tool_message("call_1", {"hits": 1}) == {"role": "tool", "tool_call_id": "call_1", "content": '{"hits": 1}'}
    # bare function specs are wrapped
    bare = [TOOLS[0]["function"]]
    assert llm.chat_with_tools(msgs(), bare)["tool_calls"][0]["name"] == "search"
    events = list(llm.stream(msgs(), tools=TOOLS))
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls == [{"type": "tool_call", "id": "call_1", "name": "search", "arguments": '{"q": "arkui x"}'}]
    assert json.loads(calls[0]["arguments"]) == {"q": "arkui x"}
    # text + tool call in one stream
    openai_server.responder = lambda req: {"content": "let me look", "tool_calls": [{"name": "search", "arguments": "{}"}]}
    events = list(llm.stream(msgs("x"), tools=TOOLS))
    assert "".join(e["text"] for e in events if e["type"] == "text") == "let me look"
    assert [e["name"] for e in events if e["type"] == "tool_call"] == ["search"]


# --- secrets --------------------------------------------------------------------------------
def test_api_key_never_in_errors_or_logs(openai_server_factory, caplog):
    caplog.set_level(logging.DEBUG)

    def responder(req):
        return {"http_status": 401, "error": f"Incorrect API key provided: {SECRET}"}

    server = openai_server_factory(responder)
    llm = LLM.from_settings(make_settings(server, llm_max_retries=1))
    with pytest.raises(LLMError) as info:
        llm.complete(msgs())
    assert "HTTP 401" in str(info.value)
    messages = [str(info.value), repr(info.value), repr(llm), caplog.text]
    server.set_faults(["500", "500", "429", "hang", "hang"])
    with pytest.raises(LLMError) as info2:
        llm.complete(msgs("b"))
    with pytest.raises(LLMError):
        list(llm.stream(msgs("c")))
    messages += [str(info2.value), caplog.text]
    for text in messages:
        assert SECRET not in text
    assert "***" in caplog.text  # the echoed key was masked, not dropped silently


# --- the server itself ----------------------------------------------------------------------
def test_server_embeddings_models_and_stop():
    import openai

    with start_server(embedding_dim=32) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=5)
        a = client.embeddings.create(model="e", input=["alpha beta", "gamma"]).data
        b = client.embeddings.create(model="e", input="alpha beta", encoding_format="float").data
        assert len(a) == 2 and len(a[0].embedding) == 32
        assert a[0].embedding == pytest.approx(b[0].embedding, abs=1e-6)
        assert sum(x * x for x in a[0].embedding) == pytest.approx(1.0, abs=1e-5)
        assert [m.id for m in client.models.list()] == ["test-model"]
        assert server.embedding_calls == 2
        # a hanging request does not keep stop() waiting
        server.add_faults("hang")
        sock = socket.create_connection(("127.0.0.1", server.port))
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        deadline = time.monotonic() + 2
        while server.chat_calls == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = threading.active_count()
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 2
    time.sleep(0.1)
    assert threading.active_count() < before
    sock.close()


def test_server_fault_rate_is_seeded_and_concurrent_calls_work():
    def run(seed):
        with start_server(fault_rate=0.5, fault_kinds=["429", "500"], seed=seed) as server:
            llm = LLM.from_settings(make_settings(server, llm_max_retries=8))
            for i in range(6):
                llm.complete(msgs(str(i)))
            return [r["fault"] for r in server.chat_requests()]

    assert run(3) == run(3)
    with start_server(fault_rate=0.3, fault_kinds=["429", "500"], seed=1, latency_s=0.01) as server:
        llm = LLM.from_settings(make_settings(server, llm_max_retries=10), MemoryCache())
        results: dict[int, str] = {}

        def work(i):
            results[i] = llm.complete(msgs(f"q{i}"))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {i: f"echo: q{i}" for i in range(16)}
        assert llm.calls == server.chat_calls and llm.failures == 0


def test_json_mode_without_response_format_support(openai_server, llm_settings):
    def responder(req):
        if "response_format" in req:
            return {"http_status": 400, "error": "unknown field: response_format"}
        return '{"ok": 1}'

    openai_server.responder = responder
    llm = LLM.from_settings(llm_settings)
    assert llm.complete_json(msgs()) == {"ok": 1}
    assert llm.complete_json(msgs("second")) == {"ok": 1}  # remembered: no second 400
    assert openai_server.chat_calls == 3
