"""Bounded requests: what one request can cost the server, measured over real HTTP.

`python -m bench.requests [--db F] [--clients 16] [--rounds 10] [--json]` serves an index
(the excerpt in tests/fixtures/docs, indexed with the default embedder, unless --db is given)
with a plain `python app.py` process, then measures in one run:

- refusals: a 1 MB query, a 100k-entry `retrieval_config`, `final_chunk_k: 1000000`, a
  21,000-character "pasted log", a NUL and a lone surrogate: the status and the seconds until
  the answer;
- `/retrieve` latency of N concurrent clients, unloaded; then while one client keeps the
  heaviest request the server accepts in flight (a query at the length limit, PPR over the
  whole graph, every budget and quota at its maximum); then while the 21,000-character query
  is sent back to back; then while an indexing job embeds (every page of the excerpt changed);
- how long the server takes to exit on SIGTERM with a long request in flight.

Every scenario reports p50 / p95 and the errors; ratios are against the unloaded p50 of the
same run (the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXCERPT = ROOT / "tests" / "fixtures" / "docs"
QUESTIONS = ["How do I create an application with ACE Tools?", "如何使用 ACE Tools 创建应用？",
             "What does the @State decorator do?", "如何实现页面跳转？", "How do I build the second page?",
             "触摸事件有哪些属性？", "ArkTS two-way synchronization $$ syntax", "Android 设备上如何运行应用？"]
LOG_LINE = "2024-05-01 12:00:01.123 E/ArkUI [ace_tools] build failed: module entry not found at ./src/main\n"


def pasted_log(chars: int) -> str:
    return (LOG_LINE * (chars // len(LOG_LINE) + 1))[:chars]


def heaviest_body(max_chars: int = 2000) -> dict:
    """The most work one accepted request can ask for (the bounds of RetrievalConfig)."""
    q = ("How do I create an ArkTS page with ACE Tools and run it on Android and iOS? " * 40)[:max_chars]
    return {"query": q, "retrieval_config": {
        "method": "ppr", "ppr_engine": "scipy", "fact_candidate_k": 1000, "file_candidate_k": 1000,
        "chunk_candidate_k": 1000, "fact_top_k": 1000, "file_top_k": 1000, "chunk_top_k": 1000,
        "final_chunk_k": 1000, "final_code_k": 1000, "final_table_k": 1000, "final_image_k": 1000}}


def build_index(work: Path) -> Path:
    from dgrag.backends.embedders import make_embedder
    from dgrag.config import Settings
    from dgrag.ingest.pipeline import index_folder
    from dgrag.store import Store

    shutil.copytree(EXCERPT, work / "docs")
    s = Settings(db_path=work / "excerpt.db", docs_root=work / "docs")
    with Store(s.db_path) as st:
        index_folder(s, st, make_embedder(s))
    return s.db_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "DGRAG_DB_PATH": str(db), "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("app exited: " + "".join(lines)[-2000:])
        try:
            urllib.request.urlopen(url + "/health", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("app did not start in 300 s")


def post(url: str, data: bytes, timeout: float = 30.0) -> tuple[int, float, str]:
    """(HTTP status or 0 for no answer, seconds, first bytes of the answer)."""
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, time.perf_counter() - t, resp.read()[:200].decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, time.perf_counter() - t, exc.read()[:200].decode("utf-8", "replace")
    except (OSError, urllib.error.URLError) as exc:
        return 0, time.perf_counter() - t, repr(exc)[:200]


def _json(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def refusals(url: str, timeout: float) -> list[dict]:
    big_config = {f"k{i}": i for i in range(100_000)}
    cases = [
        ("1 MB query", _json({"query": "a" * 1_000_000})),
        ("100k-entry retrieval_config", _json({"query": "ACE Tools", "retrieval_config": big_config})),
        ("final_chunk_k 1000000", _json({"query": "ACE Tools", "retrieval_config": {"final_chunk_k": 1_000_000}})),
        ("21,000-char pasted log", _json({"query": pasted_log(21_000)})),
        ("NUL in the query", _json({"query": "ACE\u0000 Tools"})),
        ("lone surrogate in the query", b'{"query": "ACE \\ud800 Tools"}'),
        ("query is a number", _json({"query": 42})),
    ]
    out = []
    for name, data in cases:
        status, secs, head = post(url + "/retrieve", data, timeout)
        out.append({"case": name, "body_bytes": len(data), "status": status, "seconds": round(secs, 3),
                    "answer": head[:120]})
    return out


def clients(url: str, n: int, rounds: int, timeout: float) -> dict:
    def one(i: int) -> list[tuple[int, float]]:
        res = []
        for r in range(rounds):
            q = QUESTIONS[(i + r) % len(QUESTIONS)]
            status, secs, _ = post(url + "/retrieve", _json({"query": q}), timeout)
            res.append((status, secs))
        return res

    with ThreadPoolExecutor(n) as pool:
        results = [x for part in pool.map(one, range(n)) for x in part]
    ok = sorted(s for st, s in results if st == 200)
    errors = len(results) - len(ok)
    return {"requests": len(results), "errors": errors,
            "p50_ms": round(1000 * statistics.median(ok), 1) if ok else None,
            "p95_ms": round(1000 * ok[int(0.95 * (len(ok) - 1))], 1) if ok else None}


class Background:
    """One client sending `data` back to back until stopped (the long request in flight)."""

    def __init__(self, url: str, data: bytes, timeout: float):
        self.url, self.data, self.timeout = url, data, timeout
        self.stop = threading.Event()
        self.results: list[tuple[int, float]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            status, secs, _ = post(self.url, self.data, self.timeout)
            self.results.append((status, secs))

    def __enter__(self) -> "Background":
        self.thread.start()
        time.sleep(0.5)  # let the first one get going
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(self.timeout + 5)

    def summary(self) -> dict:
        secs = [s for _, s in self.results]
        return {"sent": len(self.results), "statuses": sorted({st for st, _ in self.results}),
                "median_s": round(statistics.median(secs), 3) if secs else None}


def indexing_job(url: str, docs: Path) -> threading.Thread:
    """Start the Index tab's parse + embed job through the Gradio API, on `docs`."""
    from gradio_client import Client

    client = Client(url + "/", verbose=False)
    job = client.submit("", str(docs), "", None, api_name="/job_index")
    t = threading.Thread(target=lambda: job.result(timeout=900), daemon=True)
    t.start()
    return t


def changed_docs(work: Path) -> Path:
    """The excerpt with every heading changed: every section is re-embedded."""
    out = work / "docs-changed"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(EXCERPT, out)
    for md in out.rglob("*.md"):
        text = md.read_text(encoding="utf-8")
        md.write_text("\n".join(ln.replace("# ", "# (v2) ", 1) if ln.startswith("#") else ln
                                for ln in text.splitlines()) + "\n", encoding="utf-8")
    return out


def sigterm_exit(proc: subprocess.Popen, url: str, data: bytes) -> float:
    """Seconds from SIGTERM to exit, with `data` in flight."""
    bg = threading.Thread(target=lambda: post(url + "/retrieve", data, 60), daemon=True)
    bg.start()
    time.sleep(0.5)
    t = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return float("inf")
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="an index file to serve (a copy is served)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=10, help="requests per client per scenario")
    ap.add_argument("--timeout", type=float, default=30.0, help="client timeout per request, seconds")
    ap.add_argument("--skip", default="", help="comma-separated scenarios to skip: log,heavy,index")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    skip = set(args.skip.split(","))
    work = Path(tempfile.mkdtemp(prefix="dgrag-bench-requests-"))
    out: dict = {"clients": args.clients, "rounds": args.rounds}
    proc = None
    try:
        if args.db:
            db = work / "served.db"
            shutil.copy(args.db, db)
        else:
            t = time.perf_counter()
            db = build_index(work)
            out["index_build_s"] = round(time.perf_counter() - t, 1)
        proc, url = start_app(db)
        post(url + "/retrieve", _json({"query": "warm up"}), 120)
        base = out["unloaded"] = clients(url, args.clients, args.rounds, args.timeout)
        scenarios = [("heavy", "while the heaviest accepted request is in flight", _json(heaviest_body())),
                     ("log", "while 21,000-char queries are sent back to back", _json({"query": pasted_log(21_000)}))]
        for key, label, data in scenarios:
            if key in skip:
                continue
            with Background(url + "/retrieve", data, 120) as bg:
                res = clients(url, args.clients, args.rounds, args.timeout)
            res["long_request"] = bg.summary()
            res["label"] = label
            res["p50_vs_unloaded"] = round(res["p50_ms"] / base["p50_ms"], 2) if res["p50_ms"] else None
            out[key] = res
        if "index" not in skip:
            job = indexing_job(url, changed_docs(work))
            time.sleep(3)  # past the parse, into the embedding batches
            res = clients(url, args.clients, args.rounds, args.timeout)
            res["job_still_running_at_end"] = job.is_alive()
            res["p50_vs_unloaded"] = round(res["p50_ms"] / base["p50_ms"], 2) if res["p50_ms"] else None
            out["index"] = res
            job.join(900)
        out["unloaded_again"] = clients(url, args.clients, args.rounds, args.timeout)
        out["refusals"] = refusals(url, args.timeout)  # last: before the fix, some kept the server busy
        out["sigterm_exit_s"] = round(sigterm_exit(proc, url, _json(heaviest_body())), 2)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else _table(out))
    return out


def _table(out: dict) -> str:
    lines = []
    for key in ("unloaded", "heavy", "log", "index", "unloaded_again"):
        if key in out:
            r = out[key]
            extra = f", {r['p50_vs_unloaded']}x unloaded" if "p50_vs_unloaded" in r else ""
            lines.append(f"{key}: p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms, errors {r['errors']}/{r['requests']}"
                         f"{extra}" + (f"; long request {r['long_request']}" if "long_request" in r else ""))
    lines.append("refusals:")
    for r in out["refusals"]:
        lines.append(f"  {r['case']} ({r['body_bytes']} bytes): HTTP {r['status']} in {r['seconds']} s")
    lines.append(f"SIGTERM to exit with a request in flight: {out['sigterm_exit_s']} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
