"""What a retrieval setting costs: `rag_total` of the default against the default with an override,
interleaved question by question on one index, in one run (so both see the same machine).

    python -m bench.overhead --db F --config '{"rank_w_xref": 0}' [--n 120]

The questions are bench/arkui's (questions_v2 first); the first 5 warm the caches and are not
counted. Prints p50 and p90 of each and the ratio of the p50s.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from dgrag.config import Settings
from dgrag.retrieve.retriever import Retriever

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = (ROOT / "bench" / "arkui" / "questions_v2.jsonl", ROOT / "bench" / "arkui" / "questions.jsonl")
WARM = 5


def questions(n: int) -> list[str]:
    lines = [ln for f in QUESTIONS for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [json.loads(ln)["question"] for ln in lines][:n]


def measure(retriever: Retriever, qs: list[str], override: dict) -> dict[str, list[float]]:
    for q in qs[:WARM]:
        retriever.retrieve(q)
    times: dict[str, list[float]] = {"default": [], "override": []}
    for q in qs:
        times["default"].append(retriever.retrieve(q)["timing"]["rag_total"])
        times["override"].append(retriever.retrieve(q, override)["timing"]["rag_total"])
    return times


def summary(times: dict[str, list[float]]) -> dict:
    out = {k: {"p50_ms": round(1000 * statistics.median(v), 1),
               "p90_ms": round(1000 * sorted(v)[int(0.9 * (len(v) - 1))], 1)} for k, v in times.items()}
    out["ratio_p50"] = round(statistics.median(times["default"]) / statistics.median(times["override"]), 3)
    out["n"] = len(times["default"])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--config", required=True, help="the override, JSON (e.g. '{\"rank_w_xref\": 0}')")
    ap.add_argument("--n", type=int, default=120)
    args = ap.parse_args(argv)
    retriever = Retriever(Settings.from_env(db_path=args.db))
    print(json.dumps({"config": json.loads(args.config),
                      **summary(measure(retriever, questions(args.n), json.loads(args.config)))}, indent=1))


if __name__ == "__main__":
    main()
