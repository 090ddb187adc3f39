"""Code blocks, tables and images shown beside the answer, and how many sit where it is.

    python -m bench.media --db A.db [--db B.db ...] [--json]

For each ArkUI-X question (`bench/arkui/questions.jsonl`) whose gold pages the index holds,
the final code, table and image items of one retrieval (the default method): how many are
shown, how many sit on a gold page, and how many under a gold section (a sub-section counts
for its section). Then questions the corpus cannot answer, where anything shown is noise.
Each file is measured with the same code in one run, so a change of what code or table
vectors embed (their text, its length) is compared side by side on the same questions.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import load_questions
from dgrag.retrieve.retriever import Retriever
from dgrag.store import Store

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "arkui" / "questions.jsonl"
UNANSWERABLE = ("What will the weather be in Paris tomorrow?", "明天北京天气怎么样？",
                "How do I bake sourdough bread at home?", "红烧肉怎么做？")
MEDIA = ("codes", "tables", "images")


def _under(breadcrumb: str, sections: list[str]) -> bool:
    return any(breadcrumb == g or breadcrumb.startswith(g + " / ") for g in sections)


def measure(db: Path) -> dict:
    settings = Settings.from_env(db_path=db)
    with Store(db, readonly=True) as st:
        held = set(st.logs.files())
    questions = [q for q in load_questions(QUESTIONS) if set(q["gold_paths"]) <= held]
    retriever = Retriever(settings)
    out = {kind: {"shown": 0, "gold_page": 0, "gold_section": 0} for kind in MEDIA}
    for q in questions:
        res = retriever.search(q["question"])
        for kind in MEDIA:
            for item in res.references[kind]:
                pages = {item.source_path} | ({(item.image or {}).get("page")} if item.image else set())
                on_page = bool(pages & set(q["gold_paths"]))
                out[kind]["shown"] += 1
                out[kind]["gold_page"] += on_page
                out[kind]["gold_section"] += on_page and _under(item.breadcrumb, q.get("gold_sections", []))
    noise = sum(len(retriever.search(q).references[kind]) for q in UNANSWERABLE for kind in MEDIA)
    return {"db": str(db), "questions": len(questions), "media": out, "shown_for_unanswerable": noise}


def table(results: list[dict]) -> str:
    lines = ["| index | questions | kind | shown | on a gold page | under a gold section | shown, 4 unanswerable |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        for kind, m in r["media"].items():
            share = lambda n: f"{n} ({100 * n / m['shown']:.0f}%)" if m["shown"] else "0"  # noqa: E731
            lines.append(f"| {Path(r['db']).name} | {r['questions']} | {kind} | {m['shown']} | "
                         f"{share(m['gold_page'])} | {share(m['gold_section'])} | {r['shown_for_unanswerable']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, action="append", required=True)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = [measure(db) for db in args.db]
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
