"""Cancelling an answer at each point of it, against a real loopback chat model that holds
requests open until the test lets them go (`hold`: nothing at all, `hold_stream`: the first
piece, then nothing): before the request, while the model is silent, while it streams, in a
retry's back-off, in a tool round, and through the app's chat handler (Stop). No sleeps and no
time limits that a slow machine could miss: each hold lasts until the test releases it, so
"it returned while the model was still held" is the assertion, and a join's timeout only
fires on a real hang."""
from __future__ import annotations

import json
import threading

import pytest

from dgrag.answer import Answerer
from dgrag.answer.running import Running
from dgrag.backends.llm import LLM
from dgrag.errors import Cancelled, LLMError

HANG = 120  # s: a join that waits this long has found a hang, not a slow machine


def _llm(server, **kw) -> LLM:
    return LLM(server.base_url, "chat", timeout_s=300, max_retries=kw.pop("max_retries", 0), backoff_s=0.01, **kw)


def _in_thread(fn):
    """fn() in a thread: (thread, outcome) where outcome gets "value" or "error" when it ends."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - looked at by the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _ended(thread) -> None:
    thread.join(HANG)
    assert not thread.is_alive(), "still running: a hang"


# ---- the LLM client -------------------------------------------------------------------------
def test_a_cancel_set_before_the_call_sends_nothing(openai_server_factory):
    server = openai_server_factory()
    cancel = threading.Event()
    cancel.set()
    llm = _llm(server)
    for call in (lambda: llm.complete("hi", cancel=cancel), lambda: list(llm.stream("hi", cancel=cancel)),
                 lambda: llm.chat_with_tools("hi", [{"type": "function", "function": {"name": "f"}}], cancel=cancel)):
        with pytest.raises(Cancelled):
            call()
    assert server.chat_calls == 0
    assert not issubclass(Cancelled, LLMError)  # no caller retries it or answers offline instead


@pytest.mark.parametrize("stream", [False, True])
def test_a_cancel_ends_the_back_off_before_a_retry(openai_server_factory, stream):
    cancel = threading.Event()

    def rate_limited(request):
        cancel.set()  # the cancel comes while the client reads this 429: it then waits to retry
        return {"http_status": 429, "headers": {"Retry-After": "600"}}

    server = openai_server_factory(rate_limited)
    llm = _llm(server, max_retries=3, max_backoff_s=600)  # without the cancel: 3 waits of 600 s
    thread, outcome = _in_thread((lambda: list(llm.stream("hi", cancel=cancel))) if stream
                                 else (lambda: llm.complete("hi", cancel=cancel)))
    _ended(thread)
    assert isinstance(outcome.get("error"), Cancelled), outcome
    assert server.chat_calls == 1  # no retry


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_that_comes_after_the_cancel_is_not_used(openai_server_factory, stream):
    server = openai_server_factory(lambda request: {"content": "too late", "fault": "hold"})
    cancel = threading.Event()
    llm = _llm(server)
    thread, outcome = _in_thread((lambda: list(llm.stream("hi", cancel=cancel))) if stream
                                 else (lambda: llm.complete("hi", cancel=cancel)))
    server.wait_held(1)  # the model is silent: the client waits for its first byte
    cancel.set()
    server.release()
    _ended(thread)
    assert isinstance(outcome.get("error"), Cancelled), outcome
    assert llm.stats()["failures"] == 0 and server.chat_calls == 1


def test_a_cancel_while_the_answer_streams_stops_reading_it(openai_server_factory):
    server = openai_server_factory(lambda request: {"content": "first, then the rest of it", "fault": "hold_stream"},
                                   stream_chunk_chars=6)
    cancel = threading.Event()
    pieces: list[str] = []

    def read():
        for ev in _llm(server).stream("hi", cancel=cancel):
            pieces.append(ev["text"])

    thread, outcome = _in_thread(read)
    server.wait_held(1)  # the first piece is out, the rest held
    cancel.set()
    server.release()
    _ended(thread)
    assert isinstance(outcome.get("error"), Cancelled), outcome
    assert "".join(pieces) in ("", "first,")  # nothing read after the cancel


def test_a_cancel_while_the_model_is_silent_mid_stream_closes_the_request(openai_server_factory):
    """The reader is blocked in a read no flag reaches: the cancel shuts the connection down, and
    the model's server sees its request closed while it still holds it (it would generate on)."""
    server = openai_server_factory(lambda request: {"content": "first, then the rest", "fault": "hold_stream"},
                                   stream_chunk_chars=6)
    cancel = threading.Event()
    thread, outcome = _in_thread(lambda: list(_llm(server).stream("hi", cancel=cancel)))
    server.wait_held(1)
    cancel.set()
    assert server.wait_closed(1, HANG), "the held request was never closed by the client"
    _ended(thread)
    assert isinstance(outcome.get("error"), Cancelled), outcome
    server.release()


# ---- Running: the reader never waits on the answer --------------------------------------------
def test_running_hands_over_events_and_errors_and_a_cancel_returns_at_once():
    assert [e["n"] for e in Running(lambda cancel: iter([{"n": 1}, {"n": 2}]))] == [1, 2]

    def failing(cancel):
        yield {"n": 1}
        raise LLMError("the model is gone")

    with pytest.raises(LLMError, match="the model is gone"):
        list(Running(failing))

    blocked, after = threading.Event(), []

    def stuck(cancel):  # an answer blocked where no cancel reaches (a read from a silent model)
        yield {"n": 1}
        blocked.wait()
        after.append("woke")
        yield {"n": 2}

    running = Running(stuck)
    events = running.events(idle_s=0.01)
    assert next(events) == {"n": 1}
    assert next(events) is None  # idle: a heartbeat, while the answer is still blocked
    running.cancel()
    assert list(events) == []  # at once, while the answer is still blocked
    blocked.set()
    assert running.finished.wait(HANG) and after == ["woke"]  # it woke, its event was dropped, it ended


# ---- the agent: a tool round, and the app's chat handler (Stop) --------------------------------
def _tools_hold(request):
    if request.get("tools"):
        return {"tool_calls": [{"name": "retrieve", "arguments": {"query": "ace tools"}}], "fault": "hold"}
    return "Run ace create [1]."


def test_a_cancel_in_a_tool_round_stops_the_agent_before_its_next_call(fixture_index, openai_server_factory):
    from dgrag.retrieve.retriever import Retriever

    server = openai_server_factory(_tools_hold)
    settings, _ = fixture_index
    answerer = Answerer(settings, Retriever(settings), llm=_llm(server))
    running = Running(lambda cancel: answerer.chat("How do I create an app with ACE Tools?", cancel=cancel))
    server.wait_held(1)  # round 1: the model decides what to search, silently
    running.cancel()
    assert list(running) == []
    server.release()
    assert running.finished.wait(HANG)
    assert server.chat_calls == 1  # no search, no second round, no answer stream after the cancel


def test_stop_in_the_app_ends_a_silent_models_answer(tmp_path, fixture_index, openai_server_factory):
    """Gradio closes the chat handler's generator (Stop) only between two of its values: while
    the model is silent the handler still yields (values that change nothing), and closing it
    stops the answer: no answer is asked for once the silent round-2 decision comes back."""
    import gradio as gr

    from app_server import app_settings
    from dgrag.config import RetrievalConfig
    from dgrag.web.service import Service
    from dgrag.web.indexes import Indexes
    from dgrag.web.ui import SETTINGS_SLIDERS, Chooser, _responder

    def round_two_holds(request):
        if not request.get("tools"):
            return "never shown"
        if any(m["role"] == "tool" for m in request["messages"]):
            return {"content": "I have what I need.", "fault": "hold"}
        return {"tool_calls": [{"name": "retrieve", "arguments": {"query": "ace tools"}}]}

    server = openai_server_factory(round_two_holds)
    service = Service(app_settings(tmp_path, fixture_index, llm_base_url=server.base_url, llm_model="chat",
                                   llm_timeout_s=300, llm_max_retries=0, chat_images="off"))
    values = [getattr(RetrievalConfig(), name) for name, *_ in SETTINGS_SLIDERS]
    handler = _responder(Chooser(Indexes.of(service), None))(
        "How do I create an app with ACE Tools?", [], {}, False, "diffusion", *values)  # no answer ids yet
    skip = (gr.skip(),) * 5

    def until_silent():  # before this change, next() blocked here until the model answered
        shown = []
        while (value := next(handler)) != skip or server.held < 1:
            shown += [value] if value != skip else []
        return shown

    thread, outcome = _in_thread(until_silent)
    _ended(thread)
    assert outcome.get("value"), outcome  # the search's values, then a heartbeat
    assert server.held == 1
    handler.close()  # what Gradio does on Stop
    server.release()
    for worker in [t for t in threading.enumerate() if t.name == "dgrag-answer"]:
        _ended(worker)
    assert [bool(r["json"].get("stream")) for r in server.chat_requests()] == [False, False]
