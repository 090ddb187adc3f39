"""What the client routes add to a retrieval: `/retrieve` vs the MCP tool `search_docs` (the
official `mcp` client) vs `/v1/chat/completions` (the official `openai` client, no LLM: the
retrieved context is the answer), streamed and not, on one served index.

`python -m bench.clients [--db F] [--include GLOBS] [--rounds 5] [--json]` serves the index with a
plain `python app.py` process (as Spaces runs it) and sends the same questions through each
route, one request at a time, the routes interleaved question by question (the machine is
shared and its load drifts): the figure is each route's p50 over /retrieve's p50. Without --db
it indexes the demo corpus (data/arkui-x-docs), restricted by --include (default: the quick-start
pages in both languages; the whole corpus takes ~22 min on a quiet 2-core machine) into a
cached file under --work.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "arkui-x-docs"
SUBSET = "en/application-dev/quick-start/*,zh-cn/application-dev/quick-start/*"
URL = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"

from bench.requests import QUESTIONS, start_app  # noqa: E402


def build_index(work: Path, include: str) -> Path:
    from dgrag.config import Settings
    from dgrag.store import Store
    from dgrag.workflows import index_docs

    tag = "all" if not include else hashlib.sha1(include.encode()).hexdigest()[:8]  # the same pages, the same file
    db = work / f"demo-{tag}.db"
    if db.exists():
        return db
    s = Settings(db_path=work / f"demo-{tag}.building.db", docs_root=CORPUS, url_template=URL, include=include)
    t = time.perf_counter()
    with Store(s.db_path) as st:
        index_docs(s, st)
    s.db_path.rename(db)
    print(f"indexed {include or 'the whole corpus'} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return db


# search_docs' own retrieval settings (dgrag/web/sections.py, 5 sections): /retrieve asked the same,
# to tell what the route adds from what its defaults ask for
SEARCH_DOCS_CONFIG = {"final_chunk_k": 5, "final_code_k": 5, "final_table_k": 5, "final_image_k": 0}


def _retrieve(http, url: str, q: str, config: dict | None = None) -> float:
    t = time.perf_counter()
    r = http.post(url + "/retrieve", json={"query": q, "retrieval_config": config}, timeout=60)
    r.raise_for_status()
    return time.perf_counter() - t


def _openai(client, model: str, q: str, stream: bool) -> float:
    t = time.perf_counter()
    if stream:
        for _ in client.chat.completions.create(model=model, messages=[{"role": "user", "content": q}], stream=True):
            pass
    else:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": q}])
    return time.perf_counter() - t


class McpCaller:
    """One MCP session kept open (as an agent keeps one), in one task on an event loop of its
    own thread (anyio's scopes must close in the task that opened them); `search(q)` times one
    search_docs call through it."""

    def __init__(self, url: str):
        import concurrent.futures
        import threading

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.opened: concurrent.futures.Future = concurrent.futures.Future()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.run_coroutine_threadsafe(self._serve(url), self.loop)
        self.opened.result(60)

    async def _serve(self, url: str) -> None:
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(url + "/mcp") as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                self.opened.set_result(True)
                while (item := await self.queue.get()) is not None:
                    q, done = item
                    t = time.perf_counter()
                    res = await session.call_tool("search_docs", {"query": q})
                    done.set_result(RuntimeError(res.content[0].text) if res.is_error else time.perf_counter() - t)

    def search(self, q: str) -> float:
        import concurrent.futures

        done: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (q, done))
        out = done.result(120)
        if isinstance(out, Exception):
            raise out
        return out

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        self.task.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def measure(url: str, model: str, rounds: int) -> dict[str, list[float]]:
    import httpx2
    import openai

    http = httpx2.Client(timeout=60)
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=60)
    times: dict[str, list[float]] = {"retrieve": [], "retrieve_search_docs_config": [], "mcp_search_docs": [],
                                     "openai": [], "openai_stream": []}
    mcp = McpCaller(url)
    for q in QUESTIONS:  # warm-up: every route once, not counted
        _retrieve(http, url, q), _openai(client, model, q, False), mcp.search(q)
    for r in range(rounds):
        for i, q in enumerate(QUESTIONS):
            steps = [("retrieve", lambda: _retrieve(http, url, q)),
                     ("retrieve_search_docs_config", lambda: _retrieve(http, url, q, SEARCH_DOCS_CONFIG)),
                     ("mcp_search_docs", lambda: mcp.search(q)),
                     ("openai", lambda: _openai(client, model, q, False)),
                     ("openai_stream", lambda: _openai(client, model, q, True))]
            shift = (r + i) % len(steps)  # each route goes first as often as the others
            for name, step in steps[shift:] + steps[:shift]:
                times[name].append(step())
    mcp.close()
    return times


def report(times: dict[str, list[float]]) -> dict:
    base = statistics.median(times["retrieve"])
    out = {}
    for name, xs in times.items():
        p50 = statistics.median(xs)
        out[name] = {"n": len(xs), "p50_ms": round(p50 * 1000, 1),
                     "p90_ms": round(sorted(xs)[int(0.9 * (len(xs) - 1))] * 1000, 1),
                     "over_retrieve": round(p50 / base - 1, 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, help="an index file (default: the demo corpus, --include pages)")
    ap.add_argument("--include", default=SUBSET, help=f"pages of the demo corpus to index ('' = all; default {SUBSET})")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "dgrag-bench-clients")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    db = args.db or build_index(args.work, args.include)
    proc, url = start_app(db)
    try:
        model = json.loads(__import__("urllib.request").request.urlopen(url + "/v1/models").read())["data"][0]["id"]
        times = measure(url, model, args.rounds)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = {"db": str(db), "include": None if args.db else args.include, "questions": len(QUESTIONS),
           "rounds": args.rounds, "routes": report(times)}
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        for name, row in out["routes"].items():
            print(f"{name:16s} p50 {row['p50_ms']:7.1f} ms  p90 {row['p90_ms']:7.1f} ms  "
                  f"{row['over_retrieve']:+.1%} over /retrieve  (n={row['n']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
