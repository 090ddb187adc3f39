"""The answer without an LLM (dgrag/answer/extractive.py) and the answerability flag
(dgrag/retrieve/confidence.py), measured.

    python -m bench.answers musique --db MQ.db [--split dev|test]   gold answer in the extract (<= 600 chars)
                                                                     vs in the first passage, the first two,
                                                                     the whole context
    python -m bench.answers arkui --db ARKUI.db [--split test]       the extract's first citation a gold section,
                                                                     vs section R@1
    python -m bench.answers redux|vitepress|rust-book --db SITE.db [--split test]   the same on a doc site's
                                                                     questions (bench/sites/<site>)
    python -m bench.answers unanswerable --db ARKUI.db [--split test]  bench/unanswerable/*.jsonl flagged
                                                                     answerable: false, and the ArkUI-X
                                                                     questions (questions_v2) flagged

MQ.db: `dgrag import-passages ../shared/bench/musique/musique_train_corpus.json --db MQ.db`;
ARKUI.db: `dgrag index data/arkui-x-docs --db ARKUI.db`; SITE.db: `dgrag index /work/sites/<site> --db SITE.db`. The default method (diffusion) and
retrieval settings; `--json` prints every question's row.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from dgrag.answer import Answerer
from dgrag.config import Settings
from dgrag.evaluation.answers import contains_answer, gold_answers
from dgrag.evaluation.recall import load_questions, section_recall_at
from dgrag.retrieve.retriever import Retriever

ROOT = Path(__file__).resolve().parent.parent
MUSIQUE = ROOT.parent / "shared" / "bench" / "musique" / "musique_train_gold.jsonl"
ARKUI_V2 = ROOT / "bench" / "arkui" / "questions_v2.jsonl"
UNANSWERABLE = ROOT / "bench" / "unanswerable"
SITES = ("redux", "vitepress", "rust-book")  # bench/sites/<site>/questions.jsonl, section gold
_CITE = re.compile(r"\[(\d+)\]")
_YES_NO = {"yes", "no"}


def _split_of(position: int) -> str:  # bench/retrieval.py's MuSiQue split: every third question is dev
    return "dev" if position % 3 == 0 else "test"


def _answer(agent: Answerer, question: str):
    """(the search's result, the extract: the answer card without the not-covered note, the meta)."""
    events = list(agent.chat(question))
    result = next(e["result"] for e in events if e["type"] == "retrieval")
    meta = events[-1]["meta"]
    card = meta["components"][0]["markdown"]
    extract = card.split("\n\n", 1)[1] if meta.get("answerable") is False and "\n\n" in card else card
    return result, extract, meta


def musique(agent: Answerer, split: str | None) -> dict:
    rows = []
    for i, q in enumerate(load_questions(MUSIQUE)):
        golds = gold_answers(q)
        if (split and _split_of(i) != split) or not golds or {g.lower() for g in golds} <= _YES_NO:
            continue
        result, extract, meta = _answer(agent, q["question"])
        texts = [r.text for r in result.chunks]
        rows.append({"id": q["id"], "chars": len(extract), "answerable": meta.get("answerable"),
                     "extract": contains_answer(extract, golds),
                     "first": contains_answer(" ".join(texts[:1]), golds),
                     "first_two": contains_answer(" ".join(texts[:2]), golds),
                     "context": contains_answer(" ".join(texts), golds)})
    return _summary(rows, ["extract", "first", "first_two", "context"])


def docs(agent: Answerer, questions: Path, split: str | None) -> dict:
    """The extract's first citation a gold section, beside section R@1, on questions with section gold."""
    rows = []
    for q in load_questions(questions, split=split):
        if not q.get("gold_sections"):
            continue
        result, extract, meta = _answer(agent, q["question"])
        refs = {r["n"]: r for r in meta["references"]}
        cites = [int(n) for n in _CITE.findall(extract) if int(n) in refs]
        first = [refs[cites[0]]] if cites else []
        rows.append({"id": q["id"], "lang": q["lang"],
                     "first_citation": bool(first and section_recall_at(
                         [{"source_path": _path(result, first[0]["id"]), "breadcrumb": first[0]["breadcrumb"]}],
                         q, 1)),
                     "section_r1": bool(section_recall_at([r.to_api() for r in result.chunks], q, 1))})
    return _summary(rows, ["first_citation", "section_r1"])


def _path(result, node_id: str) -> str:
    return next((r.source_path for r in result.all_references() if r.id == node_id), "")


def unanswerable(retriever: Retriever, split: str | None) -> dict:
    out = {}
    for path in sorted(UNANSWERABLE.glob("*.jsonl")):
        qs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [{"id": q["id"], "kind": q.get("kind", ""), "flagged": not retriever.judge(q["question"])[0]}
                for q in qs]
        out[path.stem] = _summary(rows, ["flagged"])
    answerable = [{"id": q["id"], "flagged": not retriever.judge(q["question"])[0], "lang": q["lang"]}
                  for q in load_questions(ARKUI_V2, split=split)]
    out["arkui_v2 (answerable)"] = _summary(answerable, ["flagged"])
    return out


def _summary(rows: list[dict], keys: list[str]) -> dict:
    n = len(rows)
    return {"n": n, **{k: round(100 * sum(bool(r[k]) for r in rows) / max(n, 1), 1) for k in keys},
            "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", choices=["musique", "arkui", *SITES, "unanswerable"])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--split", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    settings = Settings.from_env(db_path=args.db)
    retriever = Retriever(settings)
    t0 = time.perf_counter()
    if args.set == "unanswerable":
        report = unanswerable(retriever, args.split)
    else:
        agent = Answerer(settings, retriever, llm=None)
        questions = ARKUI_V2 if args.set == "arkui" else ROOT / "bench" / "sites" / args.set / "questions.jsonl"
        report = musique(agent, args.split) if args.set == "musique" else docs(agent, questions, args.split)
    seconds = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({**report, "seconds": seconds}, ensure_ascii=False, indent=1))
        return
    strip = {k: ({kk: vv for kk, vv in v.items() if kk != "rows"} if isinstance(v, dict) else v)
             for k, v in report.items() if k != "rows"}
    print(json.dumps({**strip, "seconds": seconds}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
