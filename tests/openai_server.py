"""A real, in-process HTTP server speaking the OpenAI protocol, for tests and benchmarks.

Endpoints (all under ``/v1``):

* ``POST /v1/chat/completions`` -- non-streaming and ``stream: true`` (SSE ``data: {...}``
  chunks, then ``data: [DONE]``); ``tool_calls`` in both modes.
* ``POST /v1/embeddings`` -- deterministic hashed vectors (``embedding_dim``), L2-normalised;
  honours ``encoding_format`` ``"float"`` and ``"base64"`` (the openai client's default).
* ``GET /v1/models``.

Answers come from a pluggable ``responder(request_json) -> str | dict``. A dict may hold
``content`` and/or ``tool_calls`` (``[{"id"?, "name", "arguments": str | dict}]``),
``finish_reason``, ``fault`` (one of the fault kinds below, to fail this one request), or
``http_status`` (+ ``error`` message, ``headers``) to answer with that HTTP error.

Faults (chat completions; ``embedding_faults`` for embeddings) are picked per request:
first from the FIFO list ``faults`` (an entry ``None``/``"ok"`` means "no fault"), then with
probability ``fault_rate`` among ``fault_kinds`` using an RNG seeded with ``seed``:

* ``"429"``       -- HTTP 429 with ``Retry-After: 0``;
* ``"500"``       -- HTTP 500;
* ``"hang"``      -- sleep ``hang_s`` before answering (longer than any test client timeout);
                     the sleep ends at once when the server stops;
* ``"garbage"``   -- a valid envelope whose content is not JSON;
* ``"truncated"`` -- the content cut in half, ``finish_reason: "length"``;
* ``"cut"``       -- streaming only: one content chunk, then the connection is dropped
                     (non-streaming: the connection is dropped before any answer).
* ``"hold"``      -- a silent model: nothing at all (not even the status line) until
                     ``server.release()`` (or the server stops), then the answer as usual;
* ``"hold_stream"`` -- streaming: the headers and the first content chunk, then nothing until
                     ``server.release()``, then the rest (non-streaming: as ``"hold"``).

Held requests are counted: ``server.held`` (now), ``server.wait_held(n)`` (until n are held),
so a test knows the client is waiting on a silent model without guessing a time. A held request
whose client closes the connection ends there and is counted: ``server.closed_held``,
``server.wait_closed(n)``.

Use as a context manager, or ``start()`` / ``stop()``; ``start_server(**kw)`` returns a
started server. ``server.url`` is ``http://127.0.0.1:PORT``; ``server.base_url`` adds ``/v1``.
Every request is recorded in ``server.requests`` (a list of dicts: method, path, json,
headers (lower-case names), fault) and counted in ``server.counts`` (path -> n).
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import struct
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

FAULT_KINDS = ("429", "500", "hang", "garbage", "truncated", "cut", "hold", "hold_stream")

Responder = Callable[[dict], "str | dict"]


def _last_user_text(request: dict) -> str:
    for msg in reversed(request.get("messages") or []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def default_responder(request: dict) -> str:
    """A short deterministic answer echoing the last user message (JSON in json mode)."""
    text = _last_user_text(request)[:200]
    fmt = request.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        return json.dumps({"echo": text})
    return f"echo: {text}"


def hashed_embedding(text: str, dim: int) -> list[float]:
    """A deterministic bag-of-words vector: each token hashed to a signed bucket, normalised."""
    vec = [0.0] * dim
    tokens = re.findall(r"\w+", text.lower()) or [text]
    for tok in tokens:
        h = hashlib.sha256(tok.encode("utf-8")).digest()
        idx = int.from_bytes(h[:4], "little") % dim
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the default 5 drops connects under a burst of parallel clients
    fake: "OpenAIServer"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls between header and body writes
    wbufsize = 64 * 1024  # headers + body leave in one write (flushed explicitly)
    _streaming = False  # this request asked for a stream (set per chat request)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):  # the client left between two requests (a cancel)
            self.close_connection = True

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, False)

    # -- plumbing -------------------------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        return json.loads(raw.decode("utf-8"))

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(2)
        except OSError:
            pass

    def do_GET(self) -> None:  # noqa: N802
        fake = self.server.fake
        fake._record("GET", self.path, None, dict(self.headers), None)
        if self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server.fake
        path = self.path.rstrip("/")
        try:
            request = self._read_json()
        except (ValueError, UnicodeDecodeError):
            fake._record("POST", path, None, dict(self.headers), None)
            self._send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        try:
            if path == "/v1/chat/completions":
                self._chat(fake, path, request)
            elif path == "/v1/embeddings":
                self._embeddings(fake, path, request)
            else:
                fake._record("POST", path, request, dict(self.headers), None)
                self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    # -- common faults ---------------------------------------------------------------------
    def _http_fault(self, fake: "OpenAIServer", fault: str | None) -> bool:
        """Answer a transport-level fault; True when the request is done."""
        if fault == "429":
            self._send_json(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                            {"Retry-After": "0"})
            return True
        if fault == "500":
            self._send_json(500, {"error": {"message": "internal error", "type": "server_error"}})
            return True
        if fault == "hang":
            fake._stop.wait(fake.hang_s)
            self.close_connection = True
            if fake._stop.is_set():
                self._drop()
                return True
            return False  # hung, then answer normally (the client has long given up)
        if fault == "hold" or (fault == "hold_stream" and not self._streaming):
            if not fake._hold(self.connection):
                self._drop()
                return True
        return False

    # -- chat -------------------------------------------------------------------------------
    def _chat(self, fake: "OpenAIServer", path: str, request: dict) -> None:
        fault = fake._pick_fault(fake.faults_list, fake.fault_kinds)
        answer: Any = None
        if fault is None:
            answer = fake.responder(request)
            if isinstance(answer, dict) and answer.get("fault"):
                fault = str(answer["fault"])
                _check_fault(fault)
                answer = {k: v for k, v in answer.items() if k != "fault"}
        fake._record("POST", path, request, dict(self.headers), fault)
        if fake.latency_s > 0:
            fake._stop.wait(fake.latency_s)
        self._streaming = bool(request.get("stream"))
        if self._http_fault(fake, fault):
            return
        if answer is None:
            answer = fake.responder(request)
            if isinstance(answer, dict):
                answer = {k: v for k, v in answer.items() if k != "fault"}
        if isinstance(answer, dict) and answer.get("http_status"):
            status = int(answer["http_status"])
            self._send_json(status, {"error": {"message": str(answer.get("error") or f"HTTP {status}"),
                                               "type": "invalid_request_error" if status < 500 else "server_error"}},
                            answer.get("headers") or {})
            return
        if isinstance(answer, dict):
            content = answer.get("content")
            tool_calls = [self._norm_tool_call(tc, i) for i, tc in enumerate(answer.get("tool_calls") or [])]
            finish = answer.get("finish_reason")
        else:
            content, tool_calls, finish = ("" if answer is None else str(answer)), [], None
        if fault == "garbage":
            content, tool_calls = "this is {not valid json: [oops", []
        elif fault == "truncated":
            content = (content or "")
            content = content[: len(content) // 2]
            finish = "length"
        if not finish:
            finish = "tool_calls" if tool_calls else "stop"
        model = request.get("model") or "test-model"
        if request.get("stream"):
            self._chat_stream(fake, model, content, tool_calls, finish, cut=(fault == "cut"),
                              include_usage=bool((request.get("stream_options") or {}).get("include_usage")),
                              hold=(fault == "hold_stream"))
            return
        if fault == "cut":
            self._drop()
            return
        message: dict[str, Any] = {"role": "assistant", "content": content if (content or not tool_calls) else None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt_tokens = len(json.dumps(request.get("messages") or [])) // 4
        completion_tokens = len(content or "") // 4
        self._send_json(200, {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    @staticmethod
    def _norm_tool_call(tc: dict, i: int) -> dict:
        if "function" in tc:  # already in wire format
            fn = dict(tc["function"])
            args = fn.get("arguments", "")
            fn["arguments"] = args if isinstance(args, str) else json.dumps(args)
            return {"id": tc.get("id") or f"call_{i}", "type": "function", "function": fn}
        args = tc.get("arguments", "")
        return {
            "id": tc.get("id") or f"call_{i}_{uuid.uuid4().hex[:6]}",
            "type": "function",
            "function": {"name": tc["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
        }

    def _chat_stream(self, fake: "OpenAIServer", model: str, content: str | None, tool_calls: list[dict],
                     finish: str, *, cut: bool, include_usage: bool, hold: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")  # as real servers do: a drop is detectable
        self.end_headers()
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        created = int(time.time())

        def write(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
            self.wfile.flush()

        def event(payload: dict) -> None:
            write(b"data: " + json.dumps(payload).encode("utf-8") + b"\n\n")

        def chunk(delta: dict, finish_reason: str | None = None) -> None:
            event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]})

        chunk({"role": "assistant", "content": ""})
        pieces = _split(content or "", fake.stream_chunk_chars)
        for n, piece in enumerate(pieces):
            chunk({"content": piece})
            if cut and n == 0:
                self._drop()
                return
            if hold and n == 0 and not fake._hold(self.connection):
                self._drop()
                return
            if fake.stream_delay_s > 0:
                fake._stop.wait(fake.stream_delay_s)
        if cut:
            self._drop()
            return
        for i, tc in enumerate(tool_calls):
            fn = tc["function"]
            chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                   "function": {"name": fn["name"], "arguments": ""}}]})
            for piece in _split(fn["arguments"], fake.stream_chunk_chars):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        chunk({}, finish)
        if include_usage:
            event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        write(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- embeddings -------------------------------------------------------------------------
    def _embeddings(self, fake: "OpenAIServer", path: str, request: dict) -> None:
        fault = fake._pick_fault(fake.embedding_faults, ("429", "500", "hang"), use_rate=False)
        fake._record("POST", path, request, dict(self.headers), fault)
        if fake.latency_s > 0:
            fake._stop.wait(fake.latency_s)
        if self._http_fault(fake, fault):
            return
        inputs = request.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            self._send_json(400, {"error": {"message": "input must be a string or a list", "type": "invalid_request_error"}})
            return
        dim = int(request.get("dimensions") or fake.embedding_dim)
        data = []
        for i, item in enumerate(inputs):
            text = item if isinstance(item, str) else " ".join(str(t) for t in item)
            vec = hashed_embedding(text, dim)
            if request.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(str(x)) // 4 + 1 for x in inputs)
        self._send_json(200, {"object": "list", "data": data, "model": request.get("model") or "test-embed",
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def _split(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)]


class OpenAIServer:
    """A threaded HTTP server on 127.0.0.1 (random free port) speaking the OpenAI protocol."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        faults: Iterable[str | None] | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = ("429", "500"),
        seed: int = 0,
        latency_s: float = 0.0,
        hang_s: float = 30.0,
        embedding_dim: int = 64,
        embedding_faults: Iterable[str | None] | None = None,
        models: Iterable[str] = ("test-model",),
        stream_chunk_chars: int = 4,
        stream_delay_s: float = 0.0,
        port: int = 0,
    ) -> None:
        self.responder: Responder = responder or default_responder
        self.faults_list: list[str | None] = list(faults or [])
        self.fault_rate = float(fault_rate)
        self.fault_kinds = tuple(fault_kinds)
        self.rng = random.Random(seed)
        self.latency_s = float(latency_s)
        self.hang_s = float(hang_s)
        self.embedding_dim = int(embedding_dim)
        self.embedding_faults: list[str | None] = list(embedding_faults or [])
        self.models = list(models)
        self.stream_chunk_chars = int(stream_chunk_chars)
        self.stream_delay_s = float(stream_delay_s)
        self._port = port
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests: list[dict] = []
        self.counts: Counter[str] = Counter()
        self.fault_counts: Counter[str] = Counter()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[Any] = set()
        self._released = threading.Event()
        self._held = 0
        self.closed_held = 0  # held requests whose client closed the connection while held
        self._held_changed = threading.Condition(self._lock)
        for kind in list(self.faults_list) + list(self.fault_kinds):
            _check_fault(kind)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "OpenAIServer":
        if self._httpd is not None:
            return self
        self._stop.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"openai-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()  # wakes hanging / slow / held handlers
        self._released.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:  # idle keep-alive connections: end their handler threads too
            try:
                conn.shutdown(2)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    close = stop

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def _track(self, conn: Any, alive: bool) -> None:
        with self._lock:
            if alive:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # -- holding ------------------------------------------------------------------------------
    def _hold(self, conn: Any = None) -> bool:
        """Wait (a held request) until release() or stop(); False when the server stopped or the
        client closed the connection meanwhile (counted: `closed_held`, `wait_closed`)."""
        with self._lock:
            self._held += 1
            self._held_changed.notify_all()
        try:
            while not self._released.wait(0.01):
                if conn is not None and _peer_closed(conn):
                    with self._lock:
                        self.closed_held += 1
                        self._held_changed.notify_all()
                    return False
        finally:
            with self._lock:
                self._held -= 1
                self._held_changed.notify_all()
        return not self._stop.is_set()

    def wait_closed(self, n: int = 1, timeout: float = 120.0) -> bool:
        """Until at least n held requests were closed by their client; False after `timeout` s."""
        with self._held_changed:
            return self._held_changed.wait_for(lambda: self.closed_held >= n, timeout)

    @property
    def held(self) -> int:
        """Requests held now ("hold", "hold_stream")."""
        with self._lock:
            return self._held

    def wait_held(self, n: int = 1, timeout: float = 120.0) -> None:
        """Until at least n requests are held (AssertionError after `timeout` s)."""
        with self._held_changed:
            if not self._held_changed.wait_for(lambda: self._held >= n, timeout):
                raise AssertionError(f"{n} held request(s) expected within {timeout} s; {self._held} held")

    def release(self) -> None:
        """Let every held request (and any later one) go on."""
        self._released.set()

    # -- faults -------------------------------------------------------------------------------
    def add_faults(self, *kinds: str | None) -> None:
        """Queue faults for the next chat requests, in order (None / "ok" = a normal answer)."""
        for k in kinds:
            _check_fault(k)
        with self._lock:
            self.faults_list.extend(kinds)

    def set_faults(self, kinds: Iterable[str | None]) -> None:
        kinds = list(kinds)
        for k in kinds:
            _check_fault(k)
        with self._lock:
            self.faults_list[:] = kinds

    def set_fault_rate(self, rate: float, kinds: Iterable[str] | None = None, seed: int | None = None) -> None:
        with self._lock:
            self.fault_rate = float(rate)
            if kinds is not None:
                self.fault_kinds = tuple(kinds)
                for k in self.fault_kinds:
                    _check_fault(k)
            if seed is not None:
                self.rng = random.Random(seed)

    def _pick_fault(self, queue: list[str | None], kinds: tuple[str, ...], use_rate: bool = True) -> str | None:
        with self._lock:
            if queue:
                kind = queue.pop(0)
            elif use_rate and self.fault_rate > 0 and kinds and self.rng.random() < self.fault_rate:
                kind = self.rng.choice(kinds)
            else:
                kind = None
            if kind == "ok":
                kind = None
            if kind is not None:
                self.fault_counts[kind] += 1
            return kind

    # -- records ------------------------------------------------------------------------------
    def _record(self, method: str, path: str, body: Any, headers: dict, fault: str | None) -> None:
        with self._lock:
            headers = {k.lower(): v for k, v in headers.items()}
            self._requests.append({"method": method, "path": path, "json": body, "headers": headers,
                                   "fault": fault, "time": time.time()})
            self.counts[path] += 1

    @property
    def requests(self) -> list[dict]:
        """A snapshot of every request so far."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"] == "/v1/chat/completions"]

    @property
    def chat_calls(self) -> int:
        with self._lock:
            return self.counts["/v1/chat/completions"]

    @property
    def embedding_calls(self) -> int:
        with self._lock:
            return self.counts["/v1/embeddings"]

    def reset(self) -> None:
        """Forget the recorded requests, the counts and the queued faults."""
        with self._lock:
            self._requests.clear()
            self.counts.clear()
            self.fault_counts.clear()
            self.faults_list.clear()
            self.embedding_faults.clear()


def _peer_closed(conn: Any) -> bool:
    """The client closed (or shut down) its side: the socket reads as at its end."""
    import select
    import socket

    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _check_fault(kind: str | None) -> None:
    if kind is not None and kind != "ok" and kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault {kind!r}; expected one of {FAULT_KINDS}")


def start_server(responder: Responder | None = None, **kw: Any) -> OpenAIServer:
    """A started `OpenAIServer` (call `.stop()` or use it as a context manager)."""
    return OpenAIServer(responder, **kw).start()
