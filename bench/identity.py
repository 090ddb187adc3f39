"""Retrieval identical before and after a refactor: record, then compare.

    python -m bench.identity record --db COPY.db --out before.json [--migrate] [--config JSON] [--questions Q]
    python -m bench.identity compare before.json after.json

`record` runs `dgrag eval`'s evaluation (dense, ppr, diffusion; R@1/5/10) on the MuSiQue-100
questions (or `--questions`, e.g. bench/arkui/questions.jsonl on the demo's index) and keeps,
for every question and method, the ranked ids and scores of each result section and the stage-1/2 routes of the trace (rowids, cosine, rerank score). `--migrate` opens
the file for writing first, so that the code under test applies its migrations to it (use a
copy: the file is changed). `--config` gives retrieval parameters over the defaults, e.g. a
behaviour added since the record that a parameter turns off. `compare` says where two records differ: ids (exact), scores (to
1e-6), recall (exact). Timings are recorded but not compared (they vary run to run).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import evaluate

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT.parent / "shared" / "bench" / "musique" / "musique_train_gold.jsonl"
METHODS = ["dense", "ppr", "diffusion"]
KS = [1, 5, 10]
SECTIONS = ("chunks", "codes", "tables", "images")
TOL = 1e-6


class _Recording:
    """A retriever that keeps what each question returned (ids, scores, routes)."""

    def __init__(self, retriever):
        self.inner = retriever
        self.seen: list[dict] = []

    def retrieve(self, query, overrides=None):
        res = self.inner.retrieve(query, overrides)
        routes = res.get("trace", {}).get("routes", {})
        self.seen.append({
            "query": query, "method": res["method"],
            "results": {s: [[it["id"], it["score"]] for it in res.get(s, [])] for s in SECTIONS},
            "routes": {k: {"ids": [str(x) for x in r["rowids"]], "cosine": r["cosine"], "score": r["score"]}
                       for k, r in sorted(routes.items())}})
        return res


def record(db: Path, out: Path, migrate: bool, config: dict | None = None, questions: Path = QUESTIONS) -> dict:
    from dgrag.retrieve.retriever import Retriever
    from dgrag.store import Store

    if migrate:
        Store(db).close()  # opening for writing applies the migrations this code ships
    settings = Settings.from_env(db_path=db)
    rec = _Recording(Retriever(settings))
    report = evaluate(settings, questions, METHODS, KS, {**(config or {}), "verbose": True}, retriever=rec)
    data = {"n": report["n"], "recall": {m: r["recall"] for m, r in report["methods"].items()},
            "latency_ms": {m: r["latency_ms"] for m, r in report["methods"].items()},
            "questions": rec.seen}
    out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return data


def _close(a: list, b: list) -> bool:
    return len(a) == len(b) and all(abs(float(x) - float(y)) <= TOL for x, y in zip(a, b))


def compare(a: dict, b: dict) -> list[str]:
    """The differences between two records (empty: identical)."""
    diffs = []
    if a["recall"] != b["recall"]:
        diffs.append(f"recall: {a['recall']} != {b['recall']}")
    if len(a["questions"]) != len(b["questions"]):
        return diffs + [f"{len(a['questions'])} != {len(b['questions'])} retrievals"]
    for n, (qa, qb) in enumerate(zip(a["questions"], b["questions"])):
        where = f"#{n} {qa['method']} {qa['query'][:40]!r}"
        if (qa["query"], qa["method"]) != (qb["query"], qb["method"]):
            diffs.append(f"{where}: not the same question")
            continue
        for s in SECTIONS:
            ra, rb = qa["results"][s], qb["results"][s]
            if [i for i, _ in ra] != [i for i, _ in rb]:
                diffs.append(f"{where} {s}: ids differ")
            elif not _close([x for _, x in ra], [x for _, x in rb]):
                diffs.append(f"{where} {s}: scores differ")
        for k in sorted(set(qa["routes"]) | set(qb["routes"])):
            ra, rb = qa["routes"].get(k), qb["routes"].get(k)
            if ra is None or rb is None or ra["ids"] != rb["ids"]:
                diffs.append(f"{where} route {k}: ids differ")
            elif not (_close(ra["cosine"], rb["cosine"]) and _close(ra["score"], rb["score"])):
                diffs.append(f"{where} route {k}: scores differ")
    return diffs


def summary(a: dict) -> str:
    return "; ".join(f"{m} " + " ".join(f"R@{k}={100 * v:.1f}" for k, v in r.items()) for m, r in a["recall"].items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.identity")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--db", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--migrate", action="store_true")
    r.add_argument("--config", type=json.loads, default=None, help="retrieval parameters, a JSON object")
    r.add_argument("--questions", type=Path, default=QUESTIONS, help="a questions file (default: MuSiQue-100)")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "record":
        data = record(args.db, args.out, args.migrate, args.config, args.questions)
        print(f"{len(data['questions'])} retrievals on {data['n']} questions: {summary(data)}")
        return 0
    a, b = (json.loads(x.read_text(encoding="utf-8")) for x in (args.before, args.after))
    diffs = compare(a, b)
    n_items = sum(len(q["results"][s]) for q in a["questions"] for s in SECTIONS)
    print(f"before: {summary(a)}\nafter:  {summary(b)}")
    print(f"{len(a['questions'])} retrievals, {n_items} ranked results: "
          + ("identical (ids exact, scores within 1e-6, same recall)" if not diffs else f"{len(diffs)} differences"))
    for d in diffs[:40]:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
