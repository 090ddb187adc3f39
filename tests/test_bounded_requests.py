"""Bounded work per request: limits refused before any work, a per-client rate, cancelling
that needs the secret, and a server that stops on SIGTERM with a request in flight."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from app_server import free_port
from dgrag.config import RetrievalConfig, Settings
from dgrag.errors import AccessDenied, ConfigError, QueryRejected
from dgrag.answer.tokens import message_tokens
from dgrag.core import estimate_tokens
from dgrag.retrieve.retriever import check_query
from dgrag.web.service import Service

ROOT = Path(__file__).resolve().parent.parent


def _post(url: str, body: dict | bytes, headers: dict | None = None, timeout: float = 60):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, _json(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, _json(exc.read()), dict(exc.headers)
    except OSError as exc:  # the server went away
        return 0, repr(exc), {}


def _json(data: bytes):
    try:
        return json.loads(data or b"null")
    except ValueError:
        return data.decode("utf-8", "replace")


# ---- the limits themselves -------------------------------------------------------------------
def test_query_checks_clean_and_refuse():
    s = Settings(max_query_chars=100, max_query_tokens=20)
    assert check_query("  ACE\x00 Tools \ud800 ", s) == "ACE  Tools ?"
    with pytest.raises(QueryRejected, match="101 characters; at most 100"):
        check_query("a" * 101, s)
    with pytest.raises(QueryRejected, match="tokens; at most 20"):
        check_query("如何" * 15, s)  # 30 CJK characters: one token each
    with pytest.raises(QueryRejected, match="empty"):
        check_query(" \x00 ", s)
    with pytest.raises(QueryRejected, match="string"):
        check_query(42, s)
    assert estimate_tokens("ACE Tools 创建应用") == 7  # ACE, Tool+s, 创, 建, 应, 用


def test_the_query_limit_and_the_agents_budget_count_tokens_alike():
    """One estimate: a query the limit lets through costs the agent's book what the limit said
    (the two rules differed: 4 characters a token for the book, a word at a time for the limit)."""
    text = "ArkUI-X: how do I call `router.pushUrl()` from a Java Activity? 如何调用"
    n = estimate_tokens(text)
    assert n == 28  # 9 symbols, 15 for the words (Ar+kUI, X, how, ..., Acti+vity), 4 CJK (the book's old rule: 20)
    assert message_tokens([{"role": "user", "content": text}]) == n + 4  # role and separators
    assert check_query(text, Settings(max_query_tokens=n)) == text
    with pytest.raises(QueryRejected, match=f"about {n} tokens"):
        check_query(text, Settings(max_query_tokens=n - 1))


def test_retrieval_parameters_are_bounded_above_and_in_number():
    base = RetrievalConfig()
    with pytest.raises(ConfigError, match="final_chunk_k must be at most 1000"):
        base.merged({"final_chunk_k": 1_000_000})
    with pytest.raises(ConfigError, match="diffusion_time_budget_s must be at most 10"):
        base.merged({"diffusion_time_budget_s": 3600})
    with pytest.raises(ConfigError, match="ppr_push_eps must be at least"):
        base.merged({"ppr_push_eps": 1e-300})
    with pytest.raises(ConfigError, match="100000 keys"):
        base.merged({f"k{i}": i for i in range(100_000)})
    with pytest.raises(ConfigError, match="unknown retrieval parameter: 'x+\\.\\.\\.") as err:
        base.merged({"x" * 5000: 1})
    assert len(str(err.value)) < 120  # a long key is not echoed back whole
    assert base.merged({"final_chunk_k": 1000, "diffusion_time_budget_s": 10}).final_chunk_k == 1000


def test_cancelling_a_job_needs_the_admin_secret(tmp_path):
    service = Service(Settings(db_path=tmp_path / "x.db", admin_secret="s3cret"))
    started, release = threading.Event(), threading.Event()

    def work(job):
        started.set()
        release.wait(30)
        job.on_progress("step", 1, 1)  # raises JobCancelled once cancelled
        return {}

    runner = threading.Thread(target=lambda: service.run_job("index", work, "s3cret"))
    runner.start()
    assert started.wait(30)
    with pytest.raises(AccessDenied):
        service.cancel_job(None)
    with pytest.raises(AccessDenied):
        service.cancel_job("wrong")
    assert not service.job.cancel.is_set()
    assert service.cancel_job("s3cret") == "cancelling index"
    release.set()
    runner.join(30)
    assert service.job.done and service.job.error.startswith("cancelled")


# ---- per-client rate limit, over HTTP ----------------------------------------------------------
@pytest.fixture
def rest_only(tmp_path, fixture_index):
    """The REST API alone (no UI) on 127.0.0.1, with a rate limit of 3 calls a minute."""
    import uvicorn

    from dgrag.web.api import build_api

    base, _ = fixture_index
    shutil.copy(base.db_path, tmp_path / "rl.db")
    service = Service(Settings(db_path=tmp_path / "rl.db", rate_limit="3/minute"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_api(service), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_a_client_over_its_rate_gets_429_and_others_do_not(rest_only):
    me, other = {"X-Forwarded-For": "1.2.3.4, 10.0.0.7"}, {"X-Forwarded-For": "5.6.7.8"}
    for _ in range(3):
        status, _, _ = _post(rest_only + "/retrieve", {"query": "ACE Tools"}, me)
        assert status == 200
    status, body, headers = _post(rest_only + "/retrieve", {"query": "ACE Tools"}, me)
    assert status == 429 and "too many requests" in body["error"] and int(headers["retry-after"]) >= 1
    # a forged address written left of the proxy's does not make a new client
    status, _, _ = _post(rest_only + "/retrieve", {"query": "ACE Tools"}, {"X-Forwarded-For": "9.9.9.9, 1.2.3.4"})
    assert status == 429
    status, _, _ = _post(rest_only + "/retrieve", {"query": "ACE Tools"}, other)
    assert status == 200
    with urllib.request.urlopen(rest_only + "/health", timeout=30) as resp:  # reads are not counted
        assert resp.status == 200


def test_a_read_only_demo_is_rate_limited_by_default(tmp_path):
    from dgrag.web.api import DEFAULT_PUBLIC_RATE, make_limiter

    assert make_limiter(Service(Settings(db_path=tmp_path / "a.db"))) is None
    public = make_limiter(Service(Settings(db_path=tmp_path / "a.db", admin_secret="x")))
    assert public is not None and public.spec == DEFAULT_PUBLIC_RATE
    assert make_limiter(Service(Settings(db_path=tmp_path / "a.db", admin_secret="x", rate_limit="off"))) is None
    with pytest.raises(ConfigError, match="rate_limit"):
        make_limiter(Service(Settings(db_path=tmp_path / "a.db", rate_limit="lots")))


# ---- SIGTERM ---------------------------------------------------------------------------------
def test_the_server_stops_promptly_on_sigterm_with_a_request_in_flight(tmp_path, fixture_index,
                                                                      openai_server_factory):
    llm = openai_server_factory(latency_s=120)  # every answer takes two minutes: the request stays in flight
    base, _ = fixture_index
    shutil.copy(base.db_path, tmp_path / "served.db")
    port = free_port()
    env = {**os.environ, "DGRAG_DB_PATH": str(tmp_path / "served.db"), "DGRAG_LLM_BASE_URL": llm.url + "/v1",
           "DGRAG_LLM_MODEL": "test-model", "DGRAG_LLM_TIMEOUT_S": "300", "DGRAG_SHUTDOWN_TIMEOUT_S": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                urllib.request.urlopen(url + "/health", timeout=2).read()
                break
            except OSError:
                assert time.time() < deadline, "the app did not start"
                time.sleep(0.3)
        in_flight = threading.Thread(target=lambda: _post(url + "/chat", {"query": "ACE Tools", "use_llm": True},
                                                          timeout=200), daemon=True)
        in_flight.start()
        while not llm.counts.get("/v1/chat/completions"):  # the request is now waiting on the LLM
            assert time.time() < deadline, "the chat never reached the LLM"
            time.sleep(0.1)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        stopped_after = time.monotonic() - t
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert stopped_after < 10, f"exited {stopped_after:.1f} s after SIGTERM"


# ---- queries never wait behind the indexer, nor behind a long question -------------------------
def test_queries_never_wait_behind_an_indexing_batch_or_a_long_question():
    from dgrag.backends.embedder_choice import make_embedder
    from dgrag.backends.embedders import LanedEmbedder
    from dgrag.errors import DeadlineExceeded

    indexer = make_embedder(Settings())
    queries = make_embedder(Settings(), role="query")
    assert isinstance(queries, LanedEmbedder) and indexer not in (queries.short, queries.long)
    with indexer._lock, queries.long._lock:  # an indexing batch and a long question, both in progress
        assert queries.embed_queries(["ACE Tools"]).shape == (1, 384)
    impatient = LanedEmbedder(queries.short, queries.long, wait_s=0.1)
    with queries.long._lock:
        with pytest.raises(DeadlineExceeded, match="long questions"):
            impatient.embed_queries(["ACE Tools " * 30])
    assert queries.embed_queries(["ACE Tools " * 30]).shape == (1, 384)  # the long lane answers when free


def test_a_retrieval_past_its_deadline_is_stopped(fixture_index):
    from dgrag.errors import DeadlineExceeded
    from dgrag.retrieve.retriever import Retriever

    base, _ = fixture_index
    retriever = Retriever(Settings(db_path=base.db_path, request_timeout_s=0))
    with pytest.raises(DeadlineExceeded, match="ran out of time"):
        retriever.retrieve("ACE Tools")


def test_the_rate_limit_key_trusts_x_forwarded_for_only_from_a_proxy():
    from dgrag.web.api import client_key

    def scope(peer, xff):
        return {"client": (peer, 5000), "headers": [(b"x-forwarded-for", xff.encode())]}

    # behind a proxy on a private address: the nearest public address the proxy appended
    assert client_key(scope("10.0.0.7", "1.2.3.4, 8.8.8.8")) == "8.8.8.8"
    assert client_key(scope("127.0.0.1", "8.8.4.4")) == "8.8.4.4"
    # a caller reaching the server directly cannot pick its own bucket with the header
    assert client_key(scope("9.9.9.9", "8.8.8.8")) == "9.9.9.9"
    assert client_key({"client": ("9.9.9.9", 1), "headers": []}) == "9.9.9.9"
