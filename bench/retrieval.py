"""Recall of dense, ppr and diffusion on the four configurations of the README's retrieval table,
each method on the same index, dev and test splits apart, with the per-question pairs against dense,
and `no graph`: the default with `graph_features: false`.

    python -m bench.retrieval --work DIR [--build] [--json] [--split dev|test|tuned]

DIR holds (or, with --build, gets) one index per configuration:
- mq_llm.db:    MuSiQue-100 passages + HippoRAG's gpt-3.5 OpenIE (import-passages, import-openie)
- mq_off.db:    the same passages + the offline OpenIE (import-passages, enrich --step openie)
- arkui_struct.db: the whole ArkUI-X corpus, structural layer only (index)
- arkui_off.db: the same + the offline semantic layer (enrich --step all)
Building them embeds ~150k texts with the default embedder: about an hour on 2 cores.
The ArkUI-X questions are bench/arkui's two sets (questions.jsonl, questions_v2.jsonl), each with
its own dev / test split. questions.jsonl was tuned on in earlier rounds, so its test split is
reported apart, as `tuned` (TUNED); `test` is questions_v2's test split alone, questions no choice
was made on. MuSiQue-100's split is `split_of` (every third question is dev).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import evaluate, load_questions

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
MUSIQUE = SHARED / "bench" / "musique"
CORPUS = ROOT / "data" / "arkui-x-docs"  # the copy shipped with the repo
ARKUI_QUESTIONS = ROOT / "bench" / "arkui" / "questions.jsonl"
ARKUI_V2 = ROOT / "bench" / "arkui" / "questions_v2.jsonl"
KS = [1, 2, 5, 10]
TUNED = "tuned"  # questions.jsonl's test split: tuned on in earlier rounds, never reported as test
SPLITS = ("dev", "test", TUNED)
NO_GRAPH = {"graph_features": False}  # the "no graph" row: the default with every graph feature off
CONFIGS = {  # name: (index file, question set)
    "MuSiQue-100, LLM OpenIE (gpt-3.5)": ("mq_llm.db", "musique"),
    "MuSiQue-100, offline OpenIE": ("mq_off.db", "musique"),
    "ArkUI-X, structural layer only": ("arkui_struct.db", "arkui"),
    "ArkUI-X, offline semantic layer": ("arkui_off.db", "arkui"),
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


def split_of(position: int) -> str:
    return "dev" if position % 3 == 0 else "test"


def questions_for(kind: str, arkui_files: list[Path]) -> list[dict]:
    if kind == "musique":
        qs = load_questions(MUSIQUE / "musique_train_gold.jsonl")
        return [{**q, "split": split_of(i)} for i, q in enumerate(qs)]
    return [{**q, "split": TUNED} if f == ARKUI_QUESTIONS and q.get("split") == "test" else q
            for f in arkui_files for q in load_questions(f)]


def question_file(work: Path, kind: str) -> Path:
    """One JSONL of the set with its splits: MuSiQue's split written in, ArkUI-X's two files
    joined (each question keeps its own split)."""
    out = work / f"questions_{kind}.jsonl"
    files = [f for f in (ARKUI_QUESTIONS, ARKUI_V2) if f.exists()]
    out.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions_for(kind, files)),
                   encoding="utf-8")
    return out


def measure(work: Path, splits=SPLITS) -> dict:
    out = {}
    for name, (db, kind) in CONFIGS.items():
        if not (work / db).exists():
            continue
        settings = Settings.from_env(db_path=work / db)
        questions = question_file(work, kind)
        for split in splits:
            if split == TUNED and kind != "arkui":
                continue
            now = evaluate(settings, questions, ["dense", "ppr", "diffusion"], KS, split=split)
            bare = evaluate(settings, questions, ["diffusion"], KS, NO_GRAPH, split=split)
            now["methods"]["no graph"] = bare["methods"]["diffusion"]
            out[f"{name} | {split}"] = now
    return out


def table(results: dict) -> str:
    cols = [f"R@{k}" for k in KS] + ["S@1", "S@5", "S@10", "both@5"]
    head = "| configuration | split | n | method | " + " | ".join(cols) + \
        " | vs dense at R@1 / R@2 / R@5 (+better/-worse/=equal) |"
    lines = [head, "|" + "---|" * (len(cols) + 5)]
    for key, rep in results.items():
        name, split = key.split(" | ")
        for method, r in rep["methods"].items():
            pair = rep["paired"].get(f"{method}_vs_dense")
            vs = " / ".join(f"+{pair[str(k)]['better']}/-{pair[str(k)]['worse']}/={pair[str(k)]['equal']}"
                            for k in (1, 2, 5)) if pair else ""
            vals = [r["recall"][str(k)] for k in KS]
            vals += [r.get("section_recall", {}).get(str(k)) for k in (1, 5, 10)]
            vals += [r.get("cross_page_both", {}).get("5")]
            cells = " | ".join("" if v is None else f"{100 * v:.1f}" for v in vals)
            n = f"{rep['n']}" + (f" ({r['n_cross_page']} cross)" if "n_cross_page" in r else "")
            lines.append(f"| {name} | {split} | {n} | {method} | {cells} | {vs} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--build", action="store_true", help="build the missing indexes first (about an hour)")
    ap.add_argument("--split", default=None, help=f"only this split (dev | test | {TUNED}); default all three")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.build:
        build(args.work)
    results = measure(args.work, (args.split,) if args.split else SPLITS)
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
