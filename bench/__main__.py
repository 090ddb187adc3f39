"""Benchmarks, side by side in one run: `python -m bench --preset small|seed [--json]`.

P1 ready-to-answer load vs a bare SELECT of the edges; P2 diffusion vs igraph / SciPy PPR;
P3 sqlite-vec KNN vs numpy; P4 end-to-end retrieval on the ArkUI-X docs; P5 structural
ingest; P6 enrichment throughput vs the workers/latency bound; P7 incremental vs full index;
P8 queries served by 1 vs 2 replicas, each with nothing but a read-only copy of the file.
Medians over repeats; ratios are measured in the same run (the machines are shared).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # the loopback OpenAI server lives with the tests
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from dgrag.config import Settings  # noqa: E402
from dgrag.store import Store  # noqa: E402

from bench.replicas import p8  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "arkui-x-docs"
EXCERPT = ROOT / "tests" / "fixtures" / "docs"


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def p1(db: Path, repeat: int) -> dict:
    from dgrag.retrieve.loaded import load_index

    def bare():
        with Store(db, readonly=True) as st:
            st.con.execute("SELECT src, dst, type, weight FROM edges").fetchall()

    sel = statistics.median(timed(bare, repeat))
    cold = timed(lambda: load_index(db), 1)[0]  # rebuilds the graph, then persists its snapshot
    ready = statistics.median(timed(lambda: load_index(db), repeat))
    return {"ready_s": round(ready, 3), "select_s": round(sel, 3), "ratio_vs_select": round(ready / sel, 2),
            "cold_rebuild_s": round(cold, 3)}


MEMORY_PROBE = """
import json, sys, psutil, numpy as np
from dgrag.retrieve.loaded import load_index
from dgrag.kernels.diffusion import diffuse
proc = psutil.Process()
before = proc.memory_info().rss
li = load_index(sys.argv[1])
rng = np.random.default_rng(0)
for _ in range(10):  # queries: similarity for every node, then a diffusion
    qv = rng.standard_normal(li.vec_mat.shape[1]).astype(np.float32)
    sim = np.clip(li.similarity(qv / np.linalg.norm(qv)), 0, None)
    diffuse(li.ga, sim, {int(i): 1.0 for i in rng.integers(0, li.n_nodes, 20)}, engine="jit")
used = proc.memory_info().rss - before
arrays = sum(a.nbytes for a in (li.vec_mat, li.vec_idx, li.fact_vec, li.rowids, li.node_type, li.ga.indptr,
                                 li.ga.indices, li.ga.cost, li.ga.weight, li.ga.etype))
print(json.dumps({"query_rss_mb": round(used / 2**20, 1), "arrays_mb": round(arrays / 2**20, 1)}))
"""


def p1_memory(db: Path) -> dict:
    """Query-time memory (RSS growth of a fresh process that loads and answers) against the
    bytes of the vectors and graph arrays it holds."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(db)], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["ratio_vs_arrays"] = round(res["query_rss_mb"] / max(res["arrays_mb"], 1e-9), 2)
    return res


def p2(db: Path, repeat: int) -> dict:
    from dgrag.kernels.diffusion import diffuse
    from dgrag.kernels.ppr import ppr_igraph, ppr_scipy
    from dgrag.kernels.ppr_push import ppr_push
    from dgrag.retrieve.loaded import load_index

    li = load_index(db)
    rng = np.random.default_rng(1)
    sim = rng.uniform(0.2, 0.9, li.n_nodes)
    ents = np.flatnonzero(li.node_type == 5)
    files = np.flatnonzero(li.node_type == 0)
    chunks = np.flatnonzero(li.node_type == 1)
    runs = []
    for _ in range(repeat):
        seeds = {int(e): 0.8 for e in rng.choice(ents, 10)} | {int(f): 0.9 for f in rng.choice(files, 5)}
        mand = rng.choice(chunks, 50)
        seeds.update({int(c): 1.0 for c in mand})
        runs.append((seeds, mand))
    diffuse(li.ga, sim, *runs[0], engine="jit")  # compile outside the timing
    t_diff = [timed(lambda: diffuse(li.ga, sim, s, m, engine="jit"), 1)[0] for s, m in runs]
    t_ref = [timed(lambda: diffuse(li.ga, sim, s, m), 1)[0] for s, m in runs[: max(3, repeat // 4)]]
    adj, g = li.adjacency(), li.igraph()

    def reset(seeds):
        r = np.zeros(li.n_nodes)
        for n, w in seeds.items():
            r[n] = w
        return r

    t_sp = [timed(lambda: ppr_scipy(adj, reset(s)), 1)[0] for s, _ in runs]
    wdeg = li.weighted_degree()
    ppr_push(li.ga.indptr, li.ga.indices, li.ga.weight, wdeg, reset(runs[0][0]))  # compile outside the timing
    t_push = [timed(lambda: ppr_push(li.ga.indptr, li.ga.indices, li.ga.weight, wdeg, reset(s)), 1)[0] for s, _ in runs]
    t_ig = [timed(lambda: ppr_igraph(g, reset(s)), 1)[0] for s, _ in runs[: max(3, repeat // 4)]]
    d50, ig50 = statistics.median(t_diff), statistics.median(t_ig)
    return {"diffusion_p50_ms": round(1000 * d50, 2), "diffusion_p99_ms": round(1000 * float(np.quantile(t_diff, 0.99)), 2),
            "igraph_ppr_p50_ms": round(1000 * ig50, 2), "scipy_ppr_p50_ms": round(1000 * statistics.median(t_sp), 2),
            "speedup_vs_igraph_ppr": round(ig50 / d50, 2),
            "push_ppr_p50_ms": round(1000 * statistics.median(t_push), 2),
            "python_reference_p50_ms": round(1000 * statistics.median(t_ref), 2)}


def p2_stage3(db: Path, repeat: int) -> dict:
    """The whole default stage 3 at this scale (the fact-seeded walk, diffusion, the weighted
    ranking with its corpus-wide lexical scores), with the walk by local push (default) vs SciPy
    power iteration, and with the walk as configured before it was bounded (restart on every
    passage, eps 1e-7). Each is given the file and chunk cosines
    stage 1's routes computed, as the retriever does; `stage3_default_alone_p50_ms` computes
    them too."""
    from dgrag.config import RetrievalConfig
    from dgrag.retrieve.loaded import QueryCosines, load_index
    from dgrag.retrieve.methods import run_diffusion
    from dgrag.retrieve.stages import Route

    li, rng = load_index(db), np.random.default_rng(2)

    def route(kind, pool, k):
        return Route(kind, rng.choice(pool, k, replace=False), np.sort(rng.uniform(0.3, 0.9, k))[::-1].copy())

    def query():
        qv = rng.standard_normal(li.vec_mat.shape[1]).astype(np.float32)
        routes = {"fact": route("fact", li.fact_head.shape[0], 100), "file": route("file", li.type_rows("file"), 50),
                  "chunk": route("chunk", li.type_rows("chunk"), 50)}
        return qv / np.linalg.norm(qv), routes

    out = {}
    before = RetrievalConfig(ppr_passage_top_k=0, ppr_push_eps=1e-7)  # issue 14's walk
    text = "how do I pass parameters to router pushUrl"  # the lexical feature scores every chunk

    def stage1(qv, shared):
        cos = QueryCosines(li, qv)
        for kind in ("file", "chunk") if shared else ():
            cos.of_type(kind)  # what recall_nodes computed for the file and chunk routes
        return cos

    for name, cfg, shared in (("stage3_default_p50_ms", RetrievalConfig(), True),
                              ("stage3_default_alone_p50_ms", RetrievalConfig(), False),
                              ("stage3_unbounded_walk_p50_ms", before, True),
                              ("stage3_scipy_ppr_p50_ms", RetrievalConfig(ppr_engine="scipy"), True)):
        qs = [query() for _ in range(max(3, repeat // 2))]
        run_diffusion(li, cfg, *qs[0], [], text)  # compile and build caches outside the timing
        times = []
        for qv, r in qs:
            cos = stage1(qv, shared)
            times.append(timed(lambda: run_diffusion(li, cfg, qv, r, [], text, cos), 1)[0])
        out[name] = round(1000 * statistics.median(times), 1)
    return out


def p3(db: Path, repeat: int) -> dict:
    with Store(db, readonly=True) as st:
        ids, mat = st.vectors.matrix("entity")  # the biggest per-type table
        rng = np.random.default_rng(2)
        qs = rng.standard_normal((repeat, mat.shape[1])).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        t_vec = [timed(lambda: st.vectors.knn("entity", q, 100), 1)[0] for q in qs]

    def numpy_knn(q):
        s = mat @ q
        idx = np.argpartition(-s, 100)[:100]
        return idx[np.argsort(-s[idx])]

    t_np = [timed(lambda: numpy_knn(q), 1)[0] for q in qs]
    v, n = statistics.median(t_vec), statistics.median(t_np)
    return {"vectors": int(mat.shape[0]), "knn_p50_ms": round(1000 * v, 2), "numpy_p50_ms": round(1000 * n, 2),
            "ratio_vs_numpy": round(v / n, 2)}


QUESTIONS = ["How do I create an application with ACE Tools?", "如何使用 ACE Tools 创建应用？",
             "What does the @State decorator do?", "如何实现页面跳转？", "How do I build the second page?",
             "触摸事件有哪些属性？", "ArkTS two-way synchronization $$ syntax", "Android 设备上如何运行应用？"]


def p4(db: Path, repeat: int) -> dict:
    from dgrag.retrieve.retriever import Retriever

    r = Retriever(Settings(db_path=db))
    r.retrieve("warm up")
    stages: dict[str, list[float]] = {}
    total = []
    for i in range(repeat):
        res = r.retrieve(QUESTIONS[i % len(QUESTIONS)])
        total.append(res["timing"]["rag_total"])
        for k, v in res["timing"].items():
            stages.setdefault(k, []).append(v)
    return {"p50_ms": round(1000 * statistics.median(total), 1),
            "stages_p50_ms": {k: round(1000 * statistics.median(v), 1) for k, v in stages.items()}}


def loopback_embedder_env(server) -> dict:
    return {"embedder": "openai", "embedding_base_url": server.url + "/v1", "embedding_model": "loopback-384"}


def p5_p7(docs: Path, work: Path) -> tuple[dict, dict]:
    """Structural ingest speed, then a full index vs re-indexing after changing one page."""
    from dgrag.workflows import index_docs
    from openai_server import start_server

    tree = work / "docs"
    shutil.copytree(docs, tree)
    s = Settings(db_path=work / "p5.db", docs_root=tree)
    with Store(s.db_path) as st:
        t = time.perf_counter()
        rep = index_docs(s, st, embed=False)
        structural = time.perf_counter() - t
    server = start_server(embedding_dim=384)
    try:
        s7 = Settings(db_path=work / "p7.db", docs_root=tree, **loopback_embedder_env(server))
        with Store(s7.db_path) as st:
            t = time.perf_counter()
            index_docs(s7, st)
            full = time.perf_counter() - t
            page = sorted(tree.rglob("*.md"))[len(rep.__dict__) % 7]
            page.write_text(page.read_text(encoding="utf-8") + "\n\n## Changed\n\nOne more paragraph.\n", encoding="utf-8")
            t = time.perf_counter()
            inc = index_docs(s7, st)
            incremental = time.perf_counter() - t
    finally:
        server.stop()
    return ({"files": rep.files_indexed, "seconds": round(structural, 2), "files_per_s": round(rep.files_indexed / structural, 1)},
            {"pages": rep.files_seen, "full_s": round(full, 2), "incremental_s": round(incremental, 2),
             "reembedded": inc.embedded, "ratio_vs_full": round(incremental / full, 4)})


_SERVER = """
import sys
sys.path.insert(0, {tests!r})
from openai_server import start_server
server = start_server(latency_s={latency!r})
print(server.url, flush=True)
sys.stdin.read()  # serve until the benchmark closes our stdin
"""


def p6(db: Path, workers: int, latency: float, items: int) -> dict:
    """Enrichment against a server with fixed latency in its own process, as a vLLM or TEI
    endpoint would be: the figure is the client side (pool, retries, writes), vs W/L."""
    from dgrag.backends.llm import LLM
    from dgrag.enrich.runner import run_step

    proc = subprocess.Popen([sys.executable, "-c", _SERVER.format(tests=str(ROOT / "tests"), latency=latency)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        s = Settings(db_path=db, llm_base_url=url + "/v1", llm_model="bench", llm_timeout_s=30)
        with Store(db) as st:
            llm = LLM.from_settings(s)  # no cache: every item is a request
            llm.complete("warm up")  # imports and the first connection, once per process
            rep = run_step(st, s, "summaries", llm, max_workers=workers, limit=items)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    bound = workers / latency
    rate = rep.done / rep.seconds
    return {"workers": workers, "latency_s": latency, "items": rep.done, "items_per_s": round(rate, 1),
            "bound_per_s": bound, "fraction_of_bound": round(rate / bound, 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--preset", choices=["small", "seed"], default="small")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--corpus-db", help="an embedded ArkUI-X index for P4 (default: build the excerpt)")
    args = ap.parse_args(argv)
    from bench.synthetic import build

    repeat = args.repeat or (20 if args.preset == "small" else 10)
    work = Path(tempfile.mkdtemp(prefix="dgrag-bench-"))
    out: dict = {"preset": args.preset, "machine": f"{os.cpu_count()} cores"}
    try:
        syn = build(work / "synthetic.db", args.preset)
        out.update(nodes=syn.n_nodes, edges=syn.n_edges, synthetic_build_s=round(syn.build_s, 1))
        out["P1"] = p1(syn.path, max(3, repeat // 4))
        out["P1"]["memory"] = p1_memory(syn.path)
        out["P2"] = p2(syn.path, repeat)
        out["P2"].update(p2_stage3(syn.path, repeat))
        out["P3"] = p3(syn.path, repeat)
        corpus_db = Path(args.corpus_db) if args.corpus_db else _excerpt_index(work)
        out["P4"] = p4(corpus_db, repeat)
        docs = CORPUS if (args.preset == "seed" and CORPUS.is_dir()) else EXCERPT
        out["P5"], out["P7"] = p5_p7(docs, work / "p5")
        # P6 needs pending items, not vectors: the whole corpus's structural index at seed scale
        shutil.copy(corpus_db if args.preset == "small" else work / "p5" / "p5.db", work / "p6.db")
        out["P6"] = p6(work / "p6.db", workers=16, latency=0.2, items=128 if args.preset == "small" else 800)
        out["P8"] = p8(corpus_db, work / "p8", _queries(corpus_db, 100 if args.preset == "small" else 150))
        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2) if args.json else _table(out))


def _queries(db: Path, n: int) -> list[str]:
    """Distinct questions for P8: the section breadcrumbs of the index, cycled if too few."""
    with Store(db, readonly=True) as st:
        titles = sorted({node["breadcrumb"] for node in st.nodes.by_rowids(st.nodes.of_type(("chunk",)))})
    return [f"{titles[i % len(titles)]} ({i // len(titles)})" for i in range(n)]


def _excerpt_index(work: Path) -> Path:
    from dgrag.workflows import index_docs

    s = Settings(db_path=work / "excerpt.db", docs_root=EXCERPT)
    with Store(s.db_path) as st:
        index_docs(s, st)
    return s.db_path


def _table(out: dict) -> str:
    lines = [f"preset {out['preset']}: {out['nodes']} nodes, {out['edges']} edges ({out['machine']})"]
    for k in ("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8"):
        lines.append(f"{k}: " + ", ".join(f"{a}={b}" for a, b in out[k].items()))
    lines.append(f"peak RSS {out['peak_rss_mb']} MB")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
