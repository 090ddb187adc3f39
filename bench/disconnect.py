"""How soon does the model's request close after the client leaves, on each answering route?

    python -m bench.disconnect [--rounds 5] [--json]

A live app (REST + MCP + /v1, in this process, on 127.0.0.1) over the fixture excerpt (indexed
once into a temporary folder), answering through the loopback OpenAI server
(tests/openai_server.py), which holds each answer's stream after its first piece. Per route and
round: the client asks, waits until the model holds its answer, disconnects, and the bench times
until the loopback server sees the held request closed by the app (None: still open after 30 s).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the loopback OpenAI server and the live-app helpers

QUESTION = "How do I create an application with ACE Tools?"
GIVE_UP_S = 30.0


def _responder(request):
    if request.get("tools"):
        return {"content": "I have what I need."}
    return {"content": "Run ace create, then build it. " * 20, "fault": "hold_stream"}


def _leave_chat_stream(app, llm) -> None:
    host, port = app.url.rsplit("/", 1)[1].split(":")
    body = json.dumps({"query": QUESTION}).encode()
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.sendall(b"POST /chat/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    llm.wait_held(1, 120)
    sock.close()


def _leave_v1(app, llm) -> None:
    import openai

    client = openai.OpenAI(base_url=app.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    stream = client.chat.completions.create(model="bench", stream=True, messages=[{"role": "user", "content": QUESTION}])
    next(iter(stream))
    llm.wait_held(1, 120)
    stream.close()


def _leave_mcp(app, llm) -> None:
    from live_clients import mcp_run

    async def work(session):
        call = asyncio.ensure_future(session.call_tool("ask", {"question": QUESTION}))
        await asyncio.to_thread(llm.wait_held, 1, 120)
        call.cancel()

    mcp_run(app.url, work)


ROUTES = {"/chat/stream": _leave_chat_stream, "streamed /v1/chat/completions": _leave_v1, "MCP ask": _leave_mcp}


def one(leave, app, llm) -> float | None:
    before = llm.closed_held
    leave(app, llm)
    t = time.monotonic()
    closed = llm.wait_closed(before + 1, GIVE_UP_S)
    latency = time.monotonic() - t if closed else None
    llm.release()  # anything still held ends; the next round holds again
    llm._released.clear()
    return latency


def main(argv: list[str] | None = None) -> dict:
    from live_clients import start_served
    from openai_server import start_server

    from dgrag.config import Settings
    from dgrag.store import Store
    from dgrag.workflows import index_docs

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="dgrag-bench-disconnect-"))
    shutil.copytree(ROOT / "tests" / "fixtures" / "docs", work / "docs")
    s = Settings(db_path=work / "bench.db", docs_root=work / "docs")
    with Store(s.db_path) as st:
        index_docs(s, st)
    llm = start_server(_responder, stream_chunk_chars=8)
    app, _ = start_served(Settings(db_path=s.db_path, docs_root=s.docs_root, llm_base_url=llm.base_url,
                                   llm_model="chat", llm_timeout_s=300, llm_max_retries=0, chat_images="off"))
    out: dict = {"rounds": args.rounds, "routes": {}}
    try:
        for name, leave in ROUTES.items():
            got = [one(leave, app, llm) for _ in range(args.rounds)]
            ms = [g * 1000 for g in got if g is not None]
            out["routes"][name] = {"closed": len(ms), "still_open": len(got) - len(ms),
                                   "p50_ms": round(statistics.median(ms), 1) if ms else None,
                                   "max_ms": round(max(ms), 1) if ms else None}
    finally:
        app.stop()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=None if args.json else 2))
    return out


if __name__ == "__main__":
    main()
