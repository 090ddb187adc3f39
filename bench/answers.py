"""The answer without an LLM (dgrag/answer/extractive.py) and the answerability flag
(dgrag/retrieve/confidence.py), measured.

    python -m bench.answers musique --db MQ.db [--split dev|test]   gold answer in the extract (<= 600 chars)
                                                                     vs in the first passage, the first two,
                                                                     the whole context
    python -m bench.answers arkui --db ARKUI.db [--split test]       the extract's first citation a gold section,
                                                                     vs section R@1
    python -m bench.answers unanswerable --db ARKUI.db --split dev|test
                                                                     the unanswerable questions flagged
                                                                     answerable: false (dev: bench/unanswerable/dev,
                                                                     tuned on; test: bench/unanswerable/*.jsonl),
                                                                     and the split's answerable questions
                                                                     flagged (questions_v2, or --answerable FILE:
                                                                     bench/sites/<site>/questions.jsonl)
    python -m bench.answers api_cards --db ARKUI.db [--split test]   how often an API card comes with the
                                                                     answer, each of its fields filled, its
                                                                     section a gold one; follow-ups to an
                                                                     API's reference
    python -m bench.answers redux|vitepress|rust-book|myst-parser|hugo-docs|starlight|sqlmodel|beefree|dify-zh --db SITE.db [--split test]
                                                                     the same on a doc site's questions
                                                                     (bench/sites/<site>)

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
# bench/sites/<site>/questions.jsonl, section gold
SITES = ("redux", "vitepress", "rust-book", "myst-parser", "hugo-docs", "starlight", "sqlmodel", "beefree", "dify-zh")
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


def api_cards(agent: Answerer, split: str | None) -> dict:
    """Per question: the API card (if any) and which of its fields are filled; whether its section
    is a gold section; whether a follow-up leads to an API's reference. `api_question`: a gold
    section on an API reference page (reference/, not its error-code pages)."""
    rows = []
    for q in load_questions(ARKUI_V2, split=split):
        _, _, meta = _answer(agent, q["question"])
        card = next((c for c in meta["components"] if c["type"] == "api"), None)
        follow = next((c["items"] for c in meta["components"] if c["type"] == "followups"), [])
        gold = {g.replace(" / ", " › ") for g in q.get("gold_sections", [])}
        row = {"id": q["id"], "lang": q["lang"], "card": card is not None,
               "api_question": any("/reference/" in p and "/errorcodes/" not in p for p in q.get("gold_paths", [])),
               "api_followup": any(f["why"] == "api_reference" for f in follow)}
        for field in ("signature", "params", "returns", "errors", "since"):
            row[field] = bool(card and card[field])
        row["gold_card"] = bool(card and card["section"] in gold)
        row["shown"] = {k: card[k] for k in ("name", "section", "signature", "since")} | {
            "params": len(card["params"]), "returns": card["returns"][:80], "errors": len(card["errors"])} if card else None
        rows.append(row)
    keys = ["card", "signature", "params", "returns", "errors", "since", "gold_card", "api_followup"]
    on_api = _summary([r for r in rows if r["api_question"]], keys)
    return {**_summary(rows, keys), "api_questions": {k: v for k, v in on_api.items() if k != "rows"}}


def _path(result, node_id: str) -> str:
    return next((r.source_path for r in result.all_references() if r.id == node_id), "")


def unanswerable(retriever: Retriever, split: str | None, answerable: Path = ARKUI_V2,
                 unanswerable_sets: bool = True) -> dict:
    """Flagged shares: each unanswerable set of the split (dev: bench/unanswerable/dev; else the
    sets beside it) by kind, then the split's answerable questions of `answerable`."""
    out = {}
    folder = UNANSWERABLE / "dev" if split == "dev" else UNANSWERABLE
    for path in sorted(folder.glob("*.jsonl")) if unanswerable_sets else []:
        qs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [{"id": q["id"], "kind": q.get("kind", ""), "flagged": not retriever.judge(q["question"])[0]}
                for q in qs]
        out[path.stem] = {**_summary(rows, ["flagged"]), **{
            kind: _summary([r for r in rows if r["kind"] == kind], ["flagged"])["flagged"]
            for kind in sorted({r["kind"] for r in rows})}}
    rows = [{"id": q["id"], "flagged": not retriever.judge(q["question"])[0], "lang": q.get("lang", "")}
            for q in load_questions(answerable, split=split)]
    out[f"{answerable.parent.name}/{answerable.stem} (answerable)"] = _summary(rows, ["flagged"])
    return out


def _summary(rows: list[dict], keys: list[str]) -> dict:
    n = len(rows)
    return {"n": n, **{k: round(100 * sum(bool(r[k]) for r in rows) / max(n, 1), 1) for k in keys},
            "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", choices=["musique", "arkui", *SITES, "unanswerable", "api_cards"])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--split", default=None)
    ap.add_argument("--answerable", type=Path, default=ARKUI_V2,
                    help="unanswerable: the answerable questions (jsonl with split) to count flagged")
    ap.add_argument("--only-answerable", action="store_true",
                    help="unanswerable: skip the unanswerable sets (an index they may be about)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    settings = Settings.from_env(db_path=args.db)
    retriever = Retriever(settings)
    t0 = time.perf_counter()
    if args.set == "unanswerable":
        report = unanswerable(retriever, args.split, args.answerable, not args.only_answerable)
    else:
        agent = Answerer(settings, retriever, llm=None)
        sets = {"musique": lambda: musique(agent, args.split), "api_cards": lambda: api_cards(agent, args.split),
                "arkui": lambda: docs(agent, ARKUI_V2, args.split)}
        report = sets.get(args.set, lambda: docs(agent, ROOT / "bench" / "sites" / args.set / "questions.jsonl",
                                                 args.split))()
    seconds = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({**report, "seconds": seconds}, ensure_ascii=False, indent=1))
        return
    strip = {k: ({kk: vv for kk, vv in v.items() if kk != "rows"} if isinstance(v, dict) else v)
             for k, v in report.items() if k != "rows"}
    print(json.dumps({**strip, "seconds": seconds}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
