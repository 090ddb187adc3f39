"""The compact file against float32, paired: size, recall and query time on the same index.

    python -m bench.compact --work DIR --out DIR2 [--json] [--limit N] [--index LABEL=FILE=QUESTIONS --only]

For each index of the README's retrieval table found in DIR (bench/retrieval.py's CONFIGS), two
copies are written into DIR2 by `Store.copy_to`: `NAME-f32.db` (the file as it is, vacuumed: what
`dgrag snapshot --no-compact` writes) and `NAME-int8.db` (`dgrag snapshot`, the default: int8
vectors in fitted chunks, vacuumed). Both get dense, ppr and diffusion recall (`dgrag eval`'s
R@1 / R@5 / R@10 and section R@k where the questions have sections) with per-question pairs, and
query time: the two retrievers answer the same questions alternately in one loop (diffusion,
the default method), so load on a shared machine falls on both alike. Also: bytes of vectors and
of everything else in each copy (sum of stored values per table).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import evaluate, load_questions
from dgrag.store import Store

from .retrieval import CONFIGS, KS

METHODS = ["dense", "ppr", "diffusion"]


def copies(src: Path, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = {}
    for label, compact in (("f32", False), ("int8", True)):
        dest = out / f"{src.stem}-{label}.db"
        if not dest.exists():
            with Store(src, readonly=True) as st:
                st.copy_to(dest, compact=compact, int8=compact)
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


def query_times(files: dict[str, Path], questions: Path, limit: int | None) -> dict:
    """p50 / p90 ms of Retriever.retrieve, the two files alternately on each question."""
    from dgrag.retrieve.retriever import Retriever

    qs = load_questions(questions, limit)
    retrievers = {k: Retriever(Settings.from_env(db_path=p)) for k, p in files.items()}
    for r in retrievers.values():  # load and warm (numba, the embedder) outside the timing
        r.retrieve(qs[0]["question"], {"method": "diffusion"})
    times: dict[str, list[float]] = {k: [] for k in files}
    for i, q in enumerate(qs):
        order = list(files) if i % 2 == 0 else list(files)[::-1]
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


def paired(a: dict, b: dict, method: str) -> dict:
    """int8 against float32 per question: better / worse / equal at each k."""
    out = {}
    for k in KS:
        pairs = list(zip(b["per_question"][method][str(k)], a["per_question"][method][str(k)]))
        out[str(k)] = {"better": sum(x > y for x, y in pairs), "worse": sum(x < y for x, y in pairs),
                       "equal": sum(x == y for x, y in pairs)}
    return out


def measure(work: Path, out: Path, limit: int | None = None, configs: dict | None = None) -> dict:
    results = {}
    for name, (db, questions) in (configs or CONFIGS).items():
        if not (work / db).exists():
            continue
        files = copies(work / db, out)
        rep = {"source_mb": round((work / db).stat().st_size / 1e6, 1)}
        for label, path in files.items():
            rep[label] = {"file_mb": round(path.stat().st_size / 1e6, 1), **payload(path)}
        evals = {label: evaluate(Settings.from_env(db_path=p), questions, METHODS, KS, limit=limit)
                 for label, p in files.items()}
        for label, ev in evals.items():
            rep[label]["methods"] = ev["methods"]
        rep["int8_vs_f32"] = {m: paired(evals["f32"], evals["int8"], m) for m in METHODS}
        rep["query"] = query_times(files, questions, limit)
        rep["load_s"] = load_times(files)
        results[name] = rep
    return results


def table(results: dict) -> str:
    lines = ["| configuration | file f32 → int8 (MB) | vectors f32 → int8 (MB) | method | R@1 | R@5 | R@10 | "
             "section R@5 | int8 vs f32 at R@1 / R@5 (+/-/=) |", "|---" * 9 + "|"]
    for name, rep in results.items():
        f, q = rep["f32"], rep["int8"]
        for i, m in enumerate(METHODS):
            cells = []
            for k in ("1", "5", "10"):
                cells.append(f"{100 * f['methods'][m]['recall'][k]:.1f} → {100 * q['methods'][m]['recall'][k]:.1f}")
            sec = f["methods"][m].get("section_recall")
            cells.append(f"{100 * sec['5']:.1f} → {100 * q['methods'][m]['section_recall']['5']:.1f}" if sec else "")
            p = rep["int8_vs_f32"][m]
            vs = " / ".join(f"+{p[k]['better']}/-{p[k]['worse']}/={p[k]['equal']}" for k in ("1", "5"))
            head = (f"| {name} | {f['file_mb']} → {q['file_mb']} | {f['vectors_mb']} → {q['vectors_mb']} "
                    if i == 0 else "| | | ")
            lines.append(f"{head}| {m} | " + " | ".join(cells) + f" | {vs} |")
    lines.append("")
    lines.append("| configuration | query p50 f32 / int8 (ms) | p90 f32 / int8 (ms) | load f32 / int8 (s) |")
    lines.append("|---|---|---|---|")
    for name, rep in results.items():
        qt = rep["query"]
        lines.append(f"| {name} | {qt['f32']['p50_ms']} / {qt['int8']['p50_ms']} | "
                     f"{qt['f32']['p90_ms']} / {qt['int8']['p90_ms']} | "
                     f"{rep['load_s']['f32']} / {rep['load_s']['int8']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="the folder of bench.retrieval's indexes")
    ap.add_argument("--out", type=Path, required=True, help="where the two copies of each go")
    ap.add_argument("--limit", type=int, default=None, help="the first N questions only")
    ap.add_argument("--index", action="append", default=[], metavar="LABEL=FILE=QUESTIONS",
                    help="another index (a file in --work) and its questions; repeatable")
    ap.add_argument("--only", action="store_true", help="the --index ones only, not the README's four")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    configs = {} if args.only else dict(CONFIGS)
    for spec in args.index:
        label, db, questions = spec.split("=")
        configs[label] = (db, Path(questions))
    results = measure(args.work, args.out, args.limit, configs)
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
