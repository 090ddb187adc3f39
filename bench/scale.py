"""The fact route at 100k, 300k and 1M fact vectors: exact search against the approximate index
(dgrag/kernels/ann.py, faiss-cpu HNSW, candidates rescored exactly), side by side in one run.

    python -m bench.scale --index A.db [--index B.db] [--sizes 100000,300000,1000000]
                          [--breadths 200,400,800] [--compare-usearch 100000] [--threads 2] [--json OUT]
    python -m bench.scale --index BIG.db --real [--questions Q.jsonl]   # a built corpus's own vectors

The vector sets are synthetic, made from real ones (no text is embedded for them): the fact
vectors of the given index files are the parents, and each synthetic vector is
    normalise(a + t (b - a) + s (c - d))
with a a random parent, b one of a's 20 nearest parents (t uniform in [0, 0.5]: along the data's
own neighbourhoods), c and d two more random parents (s = 0.3: noise drawn from the data's own
covariance, not isotropic, so vectors stay in the embedder's cone). s = 0.3 makes 20k synthetic
vectors as dense as the real ones: their median nearest-neighbour cosine is the parents' (0.96
on MuSiQue + ArkUI-X facts, e5-small). Sizes are prefixes of one draw. With --real, the one
size is every fact vector of the index files as they are (a built corpus's, e.g.
`bench.replicate`'s tenfold one), and the queries are the questions only.
Queries: the MuSiQue questions embedded with the index's own query embedder (through the
project's embedder backend), and held-out synthetic vectors (another seed), reported apart.

Per size: the ANN build (wall and CPU seconds), its serialized bytes, a real dgrag file holding
the vectors in vec_fact and the index in ann_index (file bytes; the facts' text rows are left
out), the index read back from that file (retrieve/fact_ann.fact_search, the load's own path),
p50 / p95 latency of `recall_facts` exact (breadth 0) and approximate per breadth (wall and
thread CPU: the machine is shared, and the CPU time is what a query costs), recall@100 of the
approximate route against exact, and the process's peak resident memory. With
--compare-usearch, usearch's HNSW (same M, build breadth and 8-bit storage) on the same vectors.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from dgrag.config import Settings
from dgrag.store import Store

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE.parent.parent / "shared" / "bench" / "musique" / "musique_train_gold.jsonl"
K = 100  # fact_candidate_k: the route's size, and the recall's depth
NEIGHBOURS = 20
SPREAD = 0.3


def parents(paths: list[Path]) -> tuple[np.ndarray, str]:
    """The real fact vectors of the index files, and their (common) embedding model."""
    mats, models = [], set()
    for p in paths:
        with Store(p, readonly=True) as st:
            models.add(st.meta.get("embedding_model"))
            mats.append(st.vectors.matrix("fact")[1])
    if len(models) != 1:
        raise SystemExit(f"the index files were built with different models: {sorted(map(str, models))}")
    return np.ascontiguousarray(np.concatenate(mats)), models.pop()


def nearest(vectors: np.ndarray, k: int = NEIGHBOURS, block: int = 2048) -> np.ndarray:
    """Each row's k nearest other rows (exact, blocked)."""
    out = np.empty((vectors.shape[0], k), np.int64)
    for s in range(0, vectors.shape[0], block):
        sims = vectors[s:s + block] @ vectors.T
        sims[np.arange(sims.shape[0]), np.arange(s, s + sims.shape[0])] = -2.0
        out[s:s + block] = np.argpartition(-sims, k, axis=1)[:, :k]
    return out


def synthetic(base: np.ndarray, nn: np.ndarray, n: int, seed: int, spread: float = SPREAD) -> np.ndarray:
    """n synthetic unit vectors drawn from the parents (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), np.float32)
    for i in range(0, n, 100_000):
        m = min(100_000, n - i)
        a = rng.integers(0, len(base), m)
        b = nn[a, rng.integers(0, nn.shape[1], m)]
        t = rng.uniform(0.0, 0.5, (m, 1)).astype(np.float32)
        c, d = rng.integers(0, len(base), m), rng.integers(0, len(base), m)
        x = base[a] + t * (base[b] - base[a]) + spread * (base[c] - base[d])
        out[i:i + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def nn_cosine_median(x: np.ndarray, sample: int = 20_000, seed: int = 0) -> float:
    """Median cosine of a row to its nearest other row, within a sample of `sample` rows."""
    rows = np.random.default_rng(seed).choice(len(x), min(sample, len(x)), replace=False)
    s = x[rows]
    best = np.empty(len(s), np.float32)
    for i in range(0, len(s), 2048):
        sims = s[i:i + 2048] @ s.T
        sims[np.arange(sims.shape[0]), np.arange(i, i + sims.shape[0])] = -2.0
        best[i:i + 2048] = sims.max(axis=1)
    return round(float(np.median(best)), 4)


def question_vectors(model: str, path: Path = QUESTIONS) -> np.ndarray:
    """The MuSiQue questions, embedded by the index's query embedder."""
    from dgrag.backends.embedder_choice import make_embedder, resolve_embedder

    texts = [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    emb = make_embedder(resolve_embedder(Settings(), {"embedding_model": model}), role="query")
    return np.asarray(emb.embed_queries(texts), dtype=np.float32)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def timed_route(li, queries: np.ndarray, breadth: int) -> tuple[list[np.ndarray], dict]:
    """The fact route of every query at one breadth: positions, and wall / CPU p50 and p95 (ms)."""
    from dgrag.retrieve.stages import recall_facts

    found, wall, cpu = [], [], []
    for q in queries:
        w, c = time.perf_counter(), time.thread_time()
        route = recall_facts(li, q, K, breadth)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
        found.append(route.positions)
    ms = {"p50_ms": _ms(statistics.median(wall)), "p95_ms": _ms(np.percentile(wall, 95)),
          "cpu_p50_ms": _ms(statistics.median(cpu)), "cpu_p95_ms": _ms(np.percentile(cpu, 95))}
    return found, ms


def _ms(seconds: float) -> float:
    return round(float(seconds) * 1000, 2)


def recall_at_k(found: list[np.ndarray], exact: list[np.ndarray]) -> list[float]:
    return [len(set(f.tolist()) & set(e.tolist())) / max(len(e), 1) for f, e in zip(found, exact)]


def summary(values: list[float]) -> dict:
    return {"mean": round(float(np.mean(values)), 4), "min": round(float(np.min(values)), 2)}


def rss_mb() -> float:
    """The process's resident memory now."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return round(int(f.read().split()[1]) * resource.getpagesize() / 2**20, 1)


def write_vectors(path: Path, x: np.ndarray, model: str) -> np.ndarray:
    """A blank dgrag file holding `x` as its fact vectors (rowids 1..n); the rowids."""
    rowids = np.arange(1, len(x) + 1, dtype=np.int64)
    with Store(path) as st:
        st.bind_embedder(model, x.shape[1])
        with st.transaction():
            for i in range(0, len(x), 50_000):
                st.vectors.put_bulk("fact", rowids[i:i + 50_000], x[i:i + 50_000])
    return rowids


def file_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists()) / 1e6, 1)


def one_size(x: np.ndarray, queries: dict[str, np.ndarray], breadths: list[int], work: Path, threads: int,
             model: str) -> dict:
    """Build, store, read back and search the approximate index of `x`; exact search beside it."""
    from dgrag.retrieve.fact_ann import fact_search

    n, path = len(x), work / f"scale-{len(x)}.db"
    path.unlink(missing_ok=True)
    t = time.perf_counter()
    rowids = write_vectors(path, x, model)
    out: dict = {"vectors": n, "vectors_mb": round(x.nbytes / 1e6, 1), "write_vectors_s": round(time.perf_counter() - t, 1),
                 "file_mb_without_index": file_mb(path)}
    settings, meta = Settings(fact_ann_min_vectors=1, index_threads=threads), {"embedding_model": model}
    w, c = time.perf_counter(), time.process_time()
    built = fact_search(path, meta, rowids, x, settings)  # builds, then writes it into the file
    out.update(build_and_store_s=round(time.perf_counter() - w, 1), build_and_store_cpu_s=round(time.process_time() - c, 1))
    with Store(path, readonly=True) as st:
        head = st.ann.header("fact")
    out.update(build_s=round(head.built_s, 1), index_mb=round(head.bytes / 1e6, 1), library=head.library,
               file_mb_with_index=file_mb(path))
    del built
    before, w = rss_mb(), time.perf_counter()
    loaded = fact_search(path, meta, rowids, x, settings)  # what a load does: read back, not built
    out.update(read_back_s=round(time.perf_counter() - w, 2), index_rss_mb=round(rss_mb() - before, 1),
               read_back=loaded.how)
    li = SimpleNamespace(fact_vec=x, fact_search=loaded)  # what recall_facts reads of a LoadedIndex
    for name, q in queries.items():
        exact, ms = timed_route(li, q, 0)
        row = {"exact": ms}
        for b in breadths:
            found, ms_b = timed_route(li, q, b)
            row[f"ann_{b}"] = {**ms_b, "recall_at_100": summary(recall_at_k(found, exact)),
                               "cpu_speedup": round(ms["cpu_p50_ms"] / max(ms_b["cpu_p50_ms"], 1e-3), 1)}
        out[name] = row
    out["peak_rss_mb"] = peak_rss_mb()
    path.unlink(missing_ok=True)
    return out


def usearch_side(x: np.ndarray, queries: dict[str, np.ndarray], breadths: list[int], threads: int) -> dict:
    """usearch's HNSW at the same M, build breadth and 8-bit storage (i8), its candidates
    rescored as dgrag's are: build time, bytes, latency and recall beside faiss's."""
    from usearch.index import Index  # after faiss (see main)

    from dgrag.kernels import ann
    from dgrag.kernels.knn import topk

    w, c = time.perf_counter(), time.process_time()
    index = Index(ndim=x.shape[1], metric="cos", dtype="i8", connectivity=ann.CONNECTIVITY,
                  expansion_add=ann.EXPANSION_ADD, expansion_search=1)  # the breadth: count, per call
    index.add(np.arange(len(x), dtype=np.uint64), x, threads=threads)
    import usearch

    out: dict = {"library": f"usearch {usearch.__version__} HNSW{ann.CONNECTIVITY},i8",
                 "build_s": round(time.perf_counter() - w, 1), "build_cpu_s": round(time.process_time() - c, 1),
                 "index_mb": round(len(index.save()) / 1e6, 1)}
    for name, qs in queries.items():
        exact = [topk(x @ q, K)[0] for q in qs]
        row = {}
        for b in breadths:
            found, wall, cpu = [], [], []
            for q in qs:
                t0, c0 = time.perf_counter(), time.thread_time()
                cand = np.sort(np.asarray(index.search(q, b, threads=1).keys, dtype=np.int64))
                found.append(cand[topk(x[cand] @ q, K)[0]])
                cpu.append(time.thread_time() - c0)
                wall.append(time.perf_counter() - t0)
            row[f"ann_{b}"] = {"p50_ms": _ms(statistics.median(wall)), "cpu_p50_ms": _ms(statistics.median(cpu)),
                               "recall_at_100": summary(recall_at_k(found, exact))}
        out[name] = row
    return out


def table(report: dict, breadths: list[int]) -> str:
    """The figures as docs/benchmarks.md prints them (CPU milliseconds; recall of questions / held-out)."""
    lines = ["| vectors | exact p50 ms | " + " | ".join(f"ANN {b}: p50 ms, x faster, recall q / h" for b in breadths)
             + " | build s (CPU s) | index MB | file MB | read back s | peak RSS MB |",
             "|---" * (7 + len(breadths)) + "|"]
    for n, r in report["sizes"].items():
        q, h = r.get("questions", {}), r.get("held_out", {})
        first = q or h
        cells = [f"{n:,}", f"{first['exact']['cpu_p50_ms']}"]
        for b in breadths:
            a, hb = first[f"ann_{b}"], h.get(f"ann_{b}")
            rq = q[f"ann_{b}"]["recall_at_100"]["mean"] if q else "-"
            rh = hb["recall_at_100"]["mean"] if hb else "-"
            cells.append(f"{a['cpu_p50_ms']}, {a['cpu_speedup']}x, {rq} / {rh}")
        cells += [f"{r['build_s']} ({r['build_and_store_cpu_s']})", f"{r['index_mb']}",
                  f"{r['file_mb_without_index']} -> {r['file_mb_with_index']}", f"{r['read_back_s']}",
                  f"{r['peak_rss_mb']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, action="append", required=True, help="an index file whose fact vectors are the parents")
    ap.add_argument("--sizes", default="100000,300000,1000000", help="vector counts, comma-separated")
    ap.add_argument("--breadths", default="200,400,800", help="fact_ann_breadth values, comma-separated")
    ap.add_argument("--held-out", type=int, default=100, help="held-out synthetic queries")
    ap.add_argument("--questions", type=Path, default=QUESTIONS, help="a JSONL file of questions ('' = none)")
    ap.add_argument("--compare-usearch", default="", help="sizes at which usearch's HNSW is measured too")
    ap.add_argument("--threads", type=int, default=0, help="threads of the index builds (0 = every core)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/dgrag-scale"), help="where the files are written")
    ap.add_argument("--real", action="store_true", help="the files' own fact vectors, not a synthetic draw")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args(argv)
    sizes, breadths = sorted(int(s) for s in args.sizes.split(",")), [int(b) for b in args.breadths.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    compare = {int(s) for s in args.compare_usearch.split(",") if s}
    from dgrag.kernels import ann

    ann._faiss()  # faiss first: imported after usearch (numkong), faiss 1.15.1's index_factory segfaults
    t0 = time.perf_counter()
    base, model = parents(args.index)
    if args.real:  # exact neighbours of every vector would take longer than the index: no draw
        x_all, sizes, queries = base, [len(base)], {}
        nn_median = {"real_20k": nn_cosine_median(base)}
    else:
        nn = nearest(base)
        x_all = synthetic(base, nn, sizes[-1], seed=1)
        queries = {"held_out": synthetic(base, nn, args.held_out, seed=2)}
        nn_median = {"parents": nn_cosine_median(base), "synthetic_20k": nn_cosine_median(x_all)}
    if str(args.questions) and args.questions.is_file():
        queries = {"questions": question_vectors(model, args.questions), **queries}
    report: dict = {"model": model, "parents": len(base), "queries": {k: len(v) for k, v in queries.items()},
                    "nn_cosine_median": nn_median, "sizes": {}, "usearch": {}}
    print(json.dumps(report), file=sys.stderr, flush=True)
    for n in sizes:
        report["sizes"][n] = one_size(x_all[:n], queries, breadths, args.work, args.threads, model)
        print(json.dumps({n: report["sizes"][n]}), file=sys.stderr, flush=True)
        if n in compare:
            report["usearch"][n] = usearch_side(x_all[:n], queries, breadths, args.threads)
            print(json.dumps({f"usearch {n}": report["usearch"][n]}), file=sys.stderr, flush=True)
    report.update(peak_rss_mb=peak_rss_mb(), total_s=round(time.perf_counter() - t0, 1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(table(report, breadths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
