"""Work stops when the client leaves: on /chat/stream, a streamed /v1/chat/completions and MCP
`ask`, a client that disconnects while the model is still writing its answer has that answer
cancelled, and the model's own request is closed, as the loopback chat model sees it.

The loopback model holds the answer's stream (the headers and a first piece, then nothing) until
the test releases it; "closed while still held" is the assertion. A wait's timeout only fires on
a real hang (the latency itself is a bench figure: bench/disconnect.py)."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
from urllib.parse import urlparse

import openai
import pytest
from app_server import app_settings
from live_clients import mcp_run, start_served

HANG = 60  # s
QUESTION = "How do I create an application with ACE Tools?"


def _answer_held(request):
    if request.get("tools"):
        return {"content": "I have what I need."}  # the agent's round: no more searches
    return {"content": "Run ace create, then build it. " * 20, "fault": "hold_stream"}  # the answer: held


@pytest.fixture
def held(tmp_path, fixture_index, openai_server_factory):
    llm = openai_server_factory(_answer_held, stream_chunk_chars=8)
    app, _ = start_served(app_settings(tmp_path, fixture_index, llm_base_url=llm.base_url, llm_model="chat",
                                       llm_timeout_s=300, llm_max_retries=0, chat_images="off"))
    yield app, llm
    llm.release()
    app.stop()


def _closed_while_held(llm) -> None:
    assert llm.wait_closed(1, HANG), "the model's request stayed open after the client left"
    assert llm.held == 0
    assert llm.chat_requests()[-1]["json"].get("stream")  # the held answer was the last thing asked


def test_chat_stream_a_client_that_leaves_closes_the_models_request(held):
    app, llm = held
    url = urlparse(app.url)
    body = json.dumps({"query": QUESTION}).encode()
    sock = socket.create_connection((url.hostname, url.port), timeout=HANG)
    sock.sendall(b"POST /chat/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    llm.wait_held(1, HANG)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")  # the references are out; the text is held
    sock.close()
    _closed_while_held(llm)


def test_a_streamed_v1_completion_that_the_client_closes_closes_the_models_request(held):
    app, llm = held
    client = openai.OpenAI(base_url=app.url + "/v1", api_key="unused", max_retries=0, timeout=HANG)
    stream = client.chat.completions.create(model="app", stream=True,
                                            messages=[{"role": "user", "content": QUESTION}])
    first = next(iter(stream))
    assert first.choices[0].delta.role == "assistant"
    llm.wait_held(1, HANG)
    stream.close()
    _closed_while_held(llm)


def test_mcp_ask_a_client_that_leaves_closes_the_models_request(held):
    app, llm = held

    async def leave_while_held(session):
        call = asyncio.ensure_future(session.call_tool("ask", {"question": QUESTION}))
        await asyncio.to_thread(llm.wait_held, 1, HANG)
        call.cancel()  # the client gives up: its HTTP request is closed with the session

    mcp_run(app.url, leave_while_held)
    _closed_while_held(llm)


def test_an_answer_left_alone_still_finishes(held):
    """Control: the same held answer, the client staying: it gets the whole answer."""
    app, llm = held
    out: dict = {}

    def ask():
        client = openai.OpenAI(base_url=app.url + "/v1", api_key="unused", max_retries=0, timeout=HANG)
        chunks = list(client.chat.completions.create(model="app", stream=True,
                                                     messages=[{"role": "user", "content": QUESTION}]))
        out["text"] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    llm.wait_held(1, HANG)
    llm.release()
    thread.join(HANG)
    assert "Run ace create" in out.get("text", "") and llm.closed_held == 0
