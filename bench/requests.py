"""Bounded requests: what one request can cost the server, measured over real HTTP.

`python -m bench.requests [--db F] [--clients 16] [--rounds 4] [--phases 3] [--json]` serves
an index (the excerpt in tests/fixtures/docs, indexed with the default embedder, unless --db
is given) with a plain `python app.py` process, then measures in one run:

- `/retrieve` latency of N concurrent clients, each sending questions one after another,
  unloaded and while something else is in flight: one client sending the heaviest request
  the server accepts back to back (a query just under the length limits, PPR over the whole
  graph, every quota at its maximum); one client sending a 21,000-character "pasted log"
  back to back; an indexing job embedding every section of the excerpt. Unloaded and loaded
  phases alternate (the machine is shared and its load drifts); the figure is the ratio of
  the p50s, with the errors of each side;
- refusals: a 1 MB query, a 100k-entry `retrieval_config`, `final_chunk_k: 1000000`, the
  21,000-character query, a NUL, a lone surrogate, a number as the query: status and seconds;
- how long the server takes to exit on SIGTERM with a long request in flight.
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


def heaviest_body(chars: int = 1700) -> dict:
    """The most work one accepted request can ask for: a query just under the default limits
    (1,700 characters, ~490 of the 512 tokens) and every bound of RetrievalConfig at its maximum."""
    q = ("How do I create an ArkTS page with ACE Tools and run it on Android and iOS? " * 40)[:chars]
    return {"query": q, "retrieval_config": {
        "method": "ppr", "ppr_engine": "scipy", "fact_candidate_k": 1000, "file_candidate_k": 1000,
        "chunk_candidate_k": 1000, "fact_top_k": 1000, "file_top_k": 1000, "chunk_top_k": 1000,
        "final_chunk_k": 1000, "final_code_k": 1000, "final_table_k": 1000, "final_image_k": 1000}}


def build_index(work: Path) -> Path:
    from dgrag.config import Settings
    from dgrag.store import Store
    from dgrag.workflows import index_docs

    shutil.copytree(EXCERPT, work / "docs")
    s = Settings(db_path=work / "excerpt.db", docs_root=work / "docs")
    with Store(s.db_path) as st:
        index_docs(s, st)
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


def clients(url: str, n: int, rounds: int, timeout: float) -> list[tuple[int, float]]:
    """`n` clients, each sending `rounds` questions one after another: (status, seconds) each."""
    def one(i: int) -> list[tuple[int, float]]:
        res = []
        for r in range(rounds):
            q = QUESTIONS[(i + r) % len(QUESTIONS)]
            status, secs, _ = post(url + "/retrieve", _json({"query": q}), timeout)
            res.append((status, secs))
        return res

    with ThreadPoolExecutor(n) as pool:
        return [x for part in pool.map(one, range(n)) for x in part]


def summary(results: list[tuple[int, float]]) -> dict:
    ok = sorted(s for st, s in results if st == 200)
    return {"requests": len(results), "errors": len(results) - len(ok),
            "p50_ms": round(1000 * statistics.median(ok), 1) if ok else None,
            "p95_ms": round(1000 * ok[int(0.95 * (len(ok) - 1))], 1) if ok else None}


def _ratio(loaded: dict, unloaded: dict) -> float | None:
    return round(loaded["p50_ms"] / unloaded["p50_ms"], 2) if loaded["p50_ms"] and unloaded["p50_ms"] else None


def alternating(url: str, data: bytes, args) -> dict:
    """Unloaded and loaded phases in turn (off, on, off, on, ...): the shared machine's own load
    drifts, so each side is pooled over phases next to each other."""
    off: list = []
    on: list = []
    bg_results: list = []
    per_phase = []
    for phase in range(2 * args.phases):
        if phase % 2 == 0:
            got = clients(url, args.clients, args.rounds, args.timeout)
            off += got
        else:
            with Background(url + "/retrieve", data, 120) as bg:
                got = clients(url, args.clients, args.rounds, args.timeout)
            on += got
            bg_results += bg.results
        per_phase.append(summary(got)["p50_ms"])
    out = {"unloaded": summary(off), "loaded": summary(on), "p50_ms_per_phase": per_phase}
    out["p50_ratio"] = _ratio(out["loaded"], out["unloaded"])
    long = Background(url, data, 0)
    long.results = bg_results
    out["long_request"] = long.summary()
    return out


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
    ap.add_argument("--rounds", type=int, default=4, help="requests per client per phase")
    ap.add_argument("--phases", type=int, default=3, help="unloaded and loaded phases per scenario")
    ap.add_argument("--timeout", type=float, default=30.0, help="client timeout per request, seconds")
    ap.add_argument("--skip", default="", help="comma-separated scenarios to skip: log,heavy,index")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    skip = set(args.skip.split(","))
    work = Path(tempfile.mkdtemp(prefix="dgrag-bench-requests-"))
    out: dict = {"clients": args.clients, "rounds": args.rounds, "phases": args.phases}
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
        scenarios = [("heavy", "the heaviest accepted request, back to back", _json(heaviest_body())),
                     ("log", "21,000-character queries, back to back", _json({"query": pasted_log(21_000)}))]
        for key, label, data in scenarios:
            if key not in skip:
                out[key] = {"in_flight": label, **alternating(url, data, args)}
        if "index" not in skip:
            before = clients(url, args.clients, args.rounds, args.timeout)
            job = indexing_job(url, changed_docs(work))
            time.sleep(3)  # past the parse, into the embedding batches
            during: list = []
            per_phase = [summary(before)["p50_ms"]]
            for _ in range(args.phases):
                if not job.is_alive():
                    break
                got = clients(url, args.clients, args.rounds, args.timeout)
                during += got
                per_phase.append(summary(got)["p50_ms"])
            still = job.is_alive()
            job.join(900)
            time.sleep(2)  # the new snapshot swapped in
            after = clients(url, args.clients, args.rounds, args.timeout)
            per_phase.append(summary(after)["p50_ms"])
            res = {"in_flight": "an indexing job embedding every section of the excerpt",
                   "unloaded": summary(before + after), "loaded": summary(during), "p50_ms_per_phase": per_phase,
                   "job_still_running_after_the_loaded_phases": still}
            res["p50_ratio"] = _ratio(res["loaded"], res["unloaded"])
            out["index"] = res
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
    lines = [f"{out['clients']} clients doing /retrieve, {out['phases']} phases of {out['rounds']} each per side:"]
    for key in ("heavy", "log", "index"):
        if key in out:
            r = out[key]
            lines.append(f"{key} ({r['in_flight']}): p50 {r['unloaded']['p50_ms']} -> {r['loaded']['p50_ms']} ms "
                         f"({r['p50_ratio']}x), p95 {r['unloaded']['p95_ms']} -> {r['loaded']['p95_ms']} ms, errors "
                         f"{r['unloaded']['errors']} / {r['loaded']['errors']} of {r['loaded']['requests']}"
                         + (f"; long request {r['long_request']}" if "long_request" in r else ""))
    lines.append("refusals:")
    for r in out["refusals"]:
        lines.append(f"  {r['case']} ({r['body_bytes']} bytes): HTTP {r['status']} in {r['seconds']} s")
    lines.append(f"SIGTERM to exit with a request in flight: {out['sigterm_exit_s']} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
