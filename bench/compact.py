"""The compact file against float32, paired: size, recall and query time on the same index.

    python -m bench.compact --work DIR --out DIR2 [--json] [--limit N] [--variants f32,int8]
                            [--methods dense,diffusion] [--index LABEL=FILE=QUESTIONS --only]

For each index of the README's retrieval table found in DIR (bench/retrieval.py's CONFIGS, with
the question files bench.retrieval writes there: `questions_<kind>.jsonl`), one copy per variant
is written into DIR2: `NAME-f32.db` (the file as it is, vacuumed: what `dgrag snapshot
--no-compact` writes, the reference) and `NAME-compact.db` (what `dgrag snapshot` writes:
`compact_file`, int8 vectors centred per table; `compact-f32` keeps them float32). Each copy answers every question with each method (dense and diffusion, the
default); R@1, R@5 and section R@5 are reported per split (dev, test), each variant paired with
f32 per question. Query time: the retrievers answer the same questions alternately in one loop
(diffusion), so load on a shared machine falls on all alike. Also: bytes of vectors and of
everything else in each copy (sum of stored values per table).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import gold_of, load_questions, recall_at, section_recall_at
from dgrag.store import Store, open_connection
from dgrag.store.store import compact_file

from .retrieval import CONFIGS

METHODS = ["dense", "diffusion"]
SPLITS = ("dev", "test")
METRICS = ("R@1", "R@5", "S@5")
# what `dgrag snapshot --no-compact`, `--float32` and the default write
VARIANTS = {"f32": None, "compact-f32": {"int8": False}, "compact": {"int8": True}}


def copies(src: Path, out: Path, variants: list[str]) -> dict[str, Path]:
    """One copy of `src` per variant. The source is read through a read-only connection of its
    own, never a Store (which would upgrade an older file in place): the copy is upgraded."""
    out.mkdir(parents=True, exist_ok=True)
    made = {}
    for label in variants:
        dest = out / f"{src.stem}-{label}.db"
        if not dest.exists():
            con = open_connection(src, readonly=True)
            try:
                con.execute("VACUUM INTO ?", (str(dest),))
            finally:
                con.close()
            if VARIANTS[label] is not None:
                compact_file(dest, **VARIANTS[label])
        made[label] = dest
    return made


def payload(path: Path) -> dict[str, float]:
    """MB of stored values: vector tables (vec0's shadow tables) and the rest."""
    out = {"vectors_mb": 0.0, "rest_mb": 0.0}
    with Store(path, readonly=True) as st:
        names = [n for (n,) in st.con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        for name in names:
            cols = [r[1] for r in st.con.execute(f'PRAGMA table_info("{name}")')]
            expr = "+".join(f'coalesce(length("{c}"), 0)' for c in cols) or "0"
            size = st.con.execute(f'SELECT coalesce(sum({expr}), 0) FROM "{name}"').fetchone()[0] / 1e6
            out["vectors_mb" if name.startswith("vec_") else "rest_mb"] += size
    return {k: round(v, 2) for k, v in out.items()}


def scores(retriever, qs: list[dict], method: str) -> list[dict]:
    """Per question: its split, R@1, R@5 and section R@5 (None without section gold)."""
    out = []
    for q in qs:
        res = retriever.retrieve(q["question"], {"method": method, "final_chunk_k": 10})
        key, gold = gold_of(q)
        out.append({"split": q.get("split"), "R@1": recall_at(res["chunks"], key, gold, 1),
                    "R@5": recall_at(res["chunks"], key, gold, 5), "S@5": section_recall_at(res["chunks"], q, 5)})
    return out


def summary(per_q: list[dict], ref: list[dict] | None) -> dict:
    """Mean of each metric per split (percent), and paired against `ref`: +better/-worse/=equal."""
    out = {}
    for split in SPLITS:
        rows = [i for i, r in enumerate(per_q) if r["split"] == split]
        cell = {"n": len(rows)}
        for m in METRICS:
            vals = [per_q[i][m] for i in rows if per_q[i][m] is not None]
            cell[m] = round(100 * sum(vals) / len(vals), 1) if vals else None
            if ref is not None and vals:
                pairs = [(per_q[i][m], ref[i][m]) for i in rows if per_q[i][m] is not None]
                cell[f"{m} vs f32"] = (sum(a > b for a, b in pairs), sum(a < b for a, b in pairs),
                                       sum(a == b for a, b in pairs))
        out[split] = cell
    return out


def query_times(retrievers: dict, qs: list[dict]) -> dict:
    """p50 / p90 ms of Retriever.retrieve (diffusion), the files alternately on each question."""
    times: dict[str, list[float]] = {k: [] for k in retrievers}
    for i, q in enumerate(qs):
        order = list(retrievers) if i % 2 == 0 else list(retrievers)[::-1]
        for k in order:
            t0 = time.perf_counter()
            retrievers[k].retrieve(q["question"], {"method": "diffusion"})
            times[k].append(1000 * (time.perf_counter() - t0))
    return {k: {"p50_ms": round(statistics.median(v), 1), "p90_ms": round(sorted(v)[int(0.9 * len(v))], 1)}
            for k, v in times.items()}


def load_times(files: dict[str, Path], rounds: int = 3) -> dict:
    """Seconds to load each file's snapshot (graph and vectors), alternately, median of rounds."""
    from dgrag.retrieve.loaded import load_index

    times: dict[str, list[float]] = {k: [] for k in files}
    for _ in range(rounds):
        for k, p in files.items():
            t0 = time.perf_counter()
            load_index(p)
            times[k].append(time.perf_counter() - t0)
    return {k: round(statistics.median(v), 3) for k, v in times.items()}


def measure_one(src: Path, questions: Path, out: Path, variants: list[str], methods: list[str],
                limit: int | None) -> dict:
    from dgrag.retrieve.retriever import Retriever

    files = copies(src, out, variants)
    rep: dict = {"source_mb": round(src.stat().st_size / 1e6, 1), "files": {}}
    for label, path in files.items():
        rep["files"][label] = {"file_mb": round(path.stat().st_size / 1e6, 1), **payload(path)}
    qs = load_questions(questions, limit)
    # no request deadline: a query slowed by the shared machine's load is timed, not dropped
    retrievers = {k: Retriever(Settings.from_env(db_path=p, request_timeout_s=3600.0)) for k, p in files.items()}
    per_q = {m: {k: scores(r, qs, m) for k, r in retrievers.items()} for m in methods}
    rep["recall"] = {m: {k: summary(v, None if k == "f32" else per_q[m]["f32"]) for k, v in by.items()}
                     for m, by in per_q.items()}
    rep["query"] = query_times(retrievers, qs)
    rep["load_s"] = load_times(files)
    return rep


def table(results: dict) -> str:
    lines = ["| configuration | split | n | method | file | R@1 | R@5 | section R@5 | vs f32 at R@1 / R@5 / S@5 (+/-/=) |",
             "|---" * 9 + "|"]
    for name, rep in results.items():
        for split in SPLITS:
            for m, by in rep["recall"].items():
                for label, cell in by.items():
                    s = cell[split]
                    vals = " | ".join("" if s[k] is None else f"{s[k]:.1f}" for k in METRICS)
                    vs = " / ".join("+{}/-{}/={}".format(*s[f"{k} vs f32"]) for k in METRICS
                                    if f"{k} vs f32" in s)
                    lines.append(f"| {name} | {split} | {s['n']} | {m} | {label} | {vals} | {vs} |")
    lines += ["", "| configuration | file (MB) | vectors (MB) | rest (MB) | query p50 (ms) | p90 (ms) | load (s) |",
              "|---|---|---|---|---|---|---|"]
    for name, rep in results.items():
        labels = list(rep["files"])
        col = lambda f: " / ".join(str(f(k)) for k in labels)  # noqa: E731
        lines.append(f"| {name} ({' / '.join(labels)}) | {col(lambda k: rep['files'][k]['file_mb'])} | "
                     f"{col(lambda k: rep['files'][k]['vectors_mb'])} | {col(lambda k: rep['files'][k]['rest_mb'])} | "
                     f"{col(lambda k: rep['query'][k]['p50_ms'])} | {col(lambda k: rep['query'][k]['p90_ms'])} | "
                     f"{col(lambda k: rep['load_s'][k])} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="the folder of bench.retrieval's indexes")
    ap.add_argument("--out", type=Path, required=True, help="where the copies of each go")
    ap.add_argument("--limit", type=int, default=None, help="the first N questions only")
    ap.add_argument("--variants", default="f32,compact", help=f"copies to compare, f32 first ({', '.join(VARIANTS)})")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--index", action="append", default=[], metavar="LABEL=FILE=QUESTIONS",
                    help="another index (a file in --work) and its questions; repeatable")
    ap.add_argument("--only", action="store_true", help="the --index ones only, not the README's four")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    configs = {} if args.only else {n: (db, args.work / f"questions_{kind}.jsonl") for n, (db, kind) in CONFIGS.items()}
    for spec in args.index:
        label, db, questions = spec.split("=")
        configs[label] = (db, Path(questions))
    variants, methods = args.variants.split(","), args.methods.split(",")
    results = {}
    for name, (db, questions) in configs.items():
        if (args.work / db).exists():
            results[name] = measure_one(args.work / db, questions, args.out, variants, methods, args.limit)
            # each configuration kept as it is done: a later one failing loses nothing
            (args.out / f"{Path(db).stem}-{'-'.join(variants)}.json").write_text(json.dumps(results[name], indent=2))
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
