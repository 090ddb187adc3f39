"""Recall of dense, ppr and diffusion on the four configurations of the README's retrieval table,
each method on the same index, with the per-question pairs against dense.

    python -m bench.retrieval --work DIR [--build] [--json]

DIR holds (or, with --build, gets) one index per configuration:
- mq_llm.db:    MuSiQue-100 passages + HippoRAG's gpt-3.5 OpenIE (import-passages, import-openie)
- mq_off.db:    the same passages + the offline OpenIE (import-passages, enrich --step openie)
- arkui_struct.db: the whole ArkUI-X corpus, structural layer only (index)
- arkui_off.db: the same + the offline semantic layer (enrich --step all)
Building them embeds ~150k texts with the default embedder: about an hour on 2 cores.
"diffusion (before)" is the diffusion as it was before the graph-trust rule (BEFORE below).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import evaluate

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
MUSIQUE = SHARED / "bench" / "musique"
CORPUS = ROOT / "data" / "arkui-x-docs"  # the copy shipped with the repo
ARKUI_QUESTIONS = ROOT / "bench" / "arkui" / "questions.jsonl"
KS = [1, 5, 10]
# the diffusion as it was before the graph-trust rule: the graph always trusted in full, its walk
# restarting on every passage at push eps 1e-7
BEFORE = {"spread_trust_full": 0, "ppr_passage_top_k": 0, "ppr_push_eps": 1e-7}
CONFIGS = {  # name: (index file, questions)
    "MuSiQue-100, LLM OpenIE (gpt-3.5)": ("mq_llm.db", MUSIQUE / "musique_train_gold.jsonl"),
    "MuSiQue-100, offline OpenIE": ("mq_off.db", MUSIQUE / "musique_train_gold.jsonl"),
    "ArkUI-X, structural layer only": ("arkui_struct.db", ARKUI_QUESTIONS),
    "ArkUI-X, offline semantic layer": ("arkui_off.db", ARKUI_QUESTIONS),
}


def _dgrag(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dgrag", *args], check=True)


def build(work: Path) -> None:
    """The four indexes, each from the shared material (skipped where the file exists)."""
    work.mkdir(parents=True, exist_ok=True)
    passages = work / "mq_passages.db"
    if not passages.exists():
        _dgrag("import-passages", str(MUSIQUE / "musique_train_corpus.json"), "--db", str(passages))
    openie = MUSIQUE / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
    for name, step in (("mq_llm.db", ["import-openie", str(openie)]), ("mq_off.db", ["enrich", "--step", "openie"])):
        if not (work / name).exists():  # a consistent copy of the passages, then its semantic layer
            _dgrag("snapshot", str(work / name), "--db", str(passages))
            _dgrag(*step, "--db", str(work / name))
    if not (work / "arkui_struct.db").exists():
        _dgrag("index", str(CORPUS), "--db", str(work / "arkui_struct.db"))
    if not (work / "arkui_off.db").exists():
        _dgrag("snapshot", str(work / "arkui_off.db"), "--db", str(work / "arkui_struct.db"))
        _dgrag("enrich", "--db", str(work / "arkui_off.db"), "--step", "all")


def measure(work: Path, split: str | None = None) -> dict:
    out = {}
    for name, (db, questions) in CONFIGS.items():
        if not (work / db).exists():
            continue
        settings = Settings.from_env(db_path=work / db)
        part = split if questions == ARKUI_QUESTIONS else None  # MuSiQue has no splits
        now = evaluate(settings, questions, ["dense", "ppr", "diffusion"], KS, split=part)
        before = evaluate(settings, questions, ["dense", "diffusion"], KS, BEFORE, split=part)
        now["methods"]["diffusion (before)"] = before["methods"]["diffusion"]
        now["paired"]["diffusion (before)_vs_dense"] = before["paired"]["diffusion_vs_dense"]
        out[name] = now
    return out


def table(results: dict) -> str:
    head = "| configuration | questions | method | " + " | ".join(f"R@{k}" for k in KS) + \
           " | vs dense, per question at R@1 / R@5 (better/worse/equal) |"
    lines = [head, "|" + "---|" * (len(KS) + 4)]
    for name, rep in results.items():
        for method, r in rep["methods"].items():
            pair = rep["paired"].get(f"{method}_vs_dense")
            vs = " / ".join(f"+{pair[str(k)]['better']}/-{pair[str(k)]['worse']}/={pair[str(k)]['equal']}"
                            for k in (1, 5)) if pair else ""
            recall = " | ".join(f"{100 * r['recall'][str(k)]:.1f}" for k in KS)
            lines.append(f"| {name} | {rep['n']} | {method} | {recall} | {vs} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--build", action="store_true", help="build the missing indexes first (about an hour)")
    ap.add_argument("--split", default=None, help="only ArkUI-X questions of this split (dev | test)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.build:
        build(args.work)
    results = measure(args.work, args.split)
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
