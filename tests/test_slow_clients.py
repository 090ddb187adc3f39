"""Bounded connections against a live server (the REST API on 127.0.0.1, served with the app's own
uvicorn config, short timeouts set here): a few slow sockets sending half their headers, half their
body, or nothing are closed by the server, and meanwhile other clients are answered; a client may
hold only so many open requests and running answers; a connection past the cap is refused; an
idle kept-alive connection is closed. Socket timeouts here only catch hangs; how fast the server
closes 1,000 of them is a bench figure (bench/slow_clients.py)."""
from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import urllib.request

import pytest
from app_server import free_port

from dgrag.config import Settings
from dgrag.web.service import Service

HANG = 30  # s: a socket that waits this long for the server found a hang
QUERY = json.dumps({"query": "ACE Tools"}).encode()


@pytest.fixture
def serve(tmp_path, fixture_index):
    """serve(**settings) -> (url, uvicorn.Server): the REST API with the app's uvicorn config."""
    import uvicorn

    from dgrag.web.api import build_api
    from dgrag.web.connections import uvicorn_config

    base, _ = fixture_index
    shutil.copy(base.db_path, tmp_path / "slow.db")
    running = []

    def start(**kw):
        settings = Settings(db_path=tmp_path / "slow.db", **kw)
        port = free_port()
        server = uvicorn.Server(uvicorn_config(build_api(Service(settings)), "127.0.0.1", port, settings))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        running.append((server, thread))
        return f"http://127.0.0.1:{port}", server, port

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(10)


def _open(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=HANG)
    if data:
        sock.sendall(data)
    return sock


def _closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before closing (b"" for nothing); raises socket.timeout on a hang."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    sock.close()
    return got


def _head(path: str, length: int, client: str = "") -> bytes:
    forwarded = f"X-Forwarded-For: {client}\r\n" if client else ""
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{forwarded}"
            f"Content-Length: {length}\r\n\r\n").encode()


def _retrieve(url: str, client: str = "") -> int:
    req = urllib.request.Request(url + "/retrieve", QUERY, {"Content-Type": "application/json",
                                                             **({"X-Forwarded-For": client} if client else {})})
    try:
        with urllib.request.urlopen(req, timeout=HANG) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_half_sent_headers_bodies_and_silence_are_closed_while_others_are_answered(serve):
    url, server, port = serve(header_timeout_s=1, body_timeout_s=1, max_connections_per_client=0)
    slow = ([_open(port) for _ in range(3)]  # nothing sent
            + [_open(port, b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-") for _ in range(3)]  # half the headers
            + [_open(port, _head("/retrieve", len(QUERY)) + QUERY[:5]) for _ in range(3)])  # half the body
    assert _retrieve(url) == 200  # answered while they hang on
    assert [_closed_by_server(s) for s in slow] == [b""] * len(slow)  # closed, no answer owed
    assert _retrieve(url) == 200
    deadline = time.monotonic() + HANG
    while server.server_state.connections and time.monotonic() < deadline:  # the last close is being handled
        time.sleep(0.02)
    assert not server.server_state.connections  # nothing left held


def test_a_slow_but_steady_request_within_its_deadlines_is_answered(serve):
    _, _, port = serve(header_timeout_s=5, body_timeout_s=5)
    sock = _open(port, _head("/retrieve", len(QUERY)))
    sock.sendall(QUERY[:5])
    time.sleep(0.2)  # a pause well inside the body's deadline: not a timing assertion
    sock.sendall(QUERY[5:])
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    sock.close()


def test_a_client_holds_only_so_many_open_requests_and_running_answers(serve):
    url, _, port = serve(max_connections_per_client=3, max_answers_per_client=1, rate_limit="1000/minute")
    me, other = "1.2.3.4", "5.6.7.8"
    held = [_open(port, _head("/retrieve", 100, me) + b"{") for _ in range(2)]  # two half-sent bodies
    held.append(_open(port, _head("/chat", 100, me) + b"{"))  # an answer running (its body still coming)
    assert _retrieve(url, me) == 429  # a fourth request of the same client
    assert _retrieve(url, other) == 200
    held.pop(0).close()
    answer = _open(port, _head("/chat", len(QUERY), me) + QUERY)  # room for a request, not for an answer
    assert _closed_by_server(answer).startswith(b"HTTP/1.1 429")
    assert _retrieve(url, me) == 200
    for sock in held:
        sock.close()


def test_connections_past_the_cap_are_refused_and_idle_ones_closed(serve):
    url, server, port = serve(max_connections=4, keep_alive_s=1, header_timeout_s=HANG)
    idle = [_open(port) for _ in range(4)]
    deadline = time.monotonic() + HANG
    while len(server.server_state.connections) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    refused = _open(port)
    assert _closed_by_server(refused).startswith(b"HTTP/1.1 503")
    for sock in idle:
        sock.close()
    while server.server_state.connections and time.monotonic() < deadline:
        time.sleep(0.02)
    kept = _open(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # answered, then kept alive, then closed
    assert _closed_by_server(kept).startswith(b"HTTP/1.1 200")
