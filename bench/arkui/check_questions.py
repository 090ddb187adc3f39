"""Validate the ArkUI-X question files against the corpus, with dgrag's own parser.

    python bench/arkui/check_questions.py [--corpus /path/to/arkui-x-docs] [--questions F ...]

Without --questions it checks both questions.jsonl (the 99 tuned on by earlier sessions) and
questions_v2.jsonl (the held-out set), each on its own and then together.

Checks: every line is a JSON object with the required fields and allowed values; ids are
unique; every gold path exists under the corpus root; every gold section is a breadcrumb of a
chunk of at least one of the question's gold pages (as `dgrag.ingest.markdown.parse_page`
computes it) and every gold page holds at least one of the gold sections; hops is 1 or 2,
and 2 only with two or more gold pages (hops 1 may list several pages when the same answer
is duplicated in them); zh questions point at zh-cn/ pages and en questions at en/ pages;
no question merely repeats one of its gold headings; split is "dev" exactly for ids whose
number is a multiple of 3 (en-003, zh-102, ...); ids are unique across all files checked.
Questions that carry a "style" field (all of questions_v2.jsonl must) have "search" or
"natural". Prints counts by lang / hops / kind / style / split and the splits crossed with
lang, hops and style. Exit status 1 on any problem.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from dgrag.ingest.markdown import parse_page  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "arkui-x-docs"
REQUIRED = ("id", "lang", "question", "gold_paths", "gold_sections", "hops", "kind", "split")
KINDS = {"howto", "api", "concept", "troubleshoot", "config", "keyword"}
STYLES = {"search", "natural"}
PREFIX = {"en": "en/", "zh": "zh-cn/"}
DEFAULT_FILES = (HERE / "questions.jsonl", HERE / "questions_v2.jsonl")
STYLE_REQUIRED = {"questions_v2.jsonl"}


def norm(s: str) -> str:
    return re.sub(r"[\W_]+", "", s.lower())


def breadcrumbs(corpus: Path, rel: str, cache: dict) -> set[str]:
    if rel not in cache:
        page = parse_page(rel, (corpus / rel).read_text(encoding="utf-8"))
        cache[rel] = {n["breadcrumb"] for n in page.nodes if n["type"] == "chunk"}
    return cache[rel]


def check(questions: Path, corpus: Path, seen: set[str] | None = None,
          cache: dict | None = None) -> tuple[list[dict], list[str]]:
    errors: list[str] = []
    rows: list[dict] = []
    seen = set() if seen is None else seen
    cache = {} if cache is None else cache
    need_style = questions.name in STYLE_REQUIRED
    for n, line in enumerate(questions.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{questions.name} line {n}"
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: not JSON ({e})")
            continue
        missing = [k for k in REQUIRED if k not in q]
        if missing:
            errors.append(f"{where}: missing {missing}")
            continue
        where = f"{q['id']} ({questions.name} line {n})"
        rows.append(q)
        if q["id"] in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(q["id"])
        m = re.fullmatch(r"(en|zh)-(\d{3,})", str(q["id"]))
        if not m or m.group(1) != q["lang"]:
            errors.append(f"{where}: id must be <lang>-<number>")
        elif q["split"] != ("dev" if int(m.group(2)) % 3 == 0 else "test"):
            errors.append(f"{where}: split must be dev exactly for ids divisible by 3")
        if "style" in q or need_style:
            if q.get("style") not in STYLES:
                errors.append(f"{where}: style {q.get('style')!r} not in {sorted(STYLES)}")
        if q["lang"] not in PREFIX:
            errors.append(f"{where}: lang must be en or zh")
        if q["kind"] not in KINDS:
            errors.append(f"{where}: kind {q['kind']!r} not in {sorted(KINDS)}")
        if q["split"] not in ("dev", "test"):
            errors.append(f"{where}: split must be dev or test")
        if not q["question"].strip() or not q["gold_paths"] or not q["gold_sections"]:
            errors.append(f"{where}: empty question, gold_paths or gold_sections")
            continue
        if q["hops"] not in (1, 2) or (q["hops"] == 2 and len(set(q["gold_paths"])) < 2):
            errors.append(f"{where}: hops {q['hops']} with {len(set(q['gold_paths']))} gold page(s)")
        crumbs: dict[str, set[str]] = {}
        for p in q["gold_paths"]:
            if not p.startswith(PREFIX.get(q["lang"], "?")):
                errors.append(f"{where}: {q['lang']} question with gold page {p}")
            if not (corpus / p).is_file():
                errors.append(f"{where}: gold path does not exist: {p}")
                continue
            crumbs[p] = breadcrumbs(corpus, p, cache)
        for s in q["gold_sections"]:
            if crumbs and not any(s in c for c in crumbs.values()):
                errors.append(f"{where}: section {s!r} is not a breadcrumb of {list(crumbs)}")
        for p, c in crumbs.items():
            if not c & set(q["gold_sections"]):
                errors.append(f"{where}: no gold section belongs to {p}")
        qn = norm(q["question"])
        for s in q["gold_sections"]:
            if qn in (norm(s), norm(s.split(" / ")[-1])):
                errors.append(f"{where}: question repeats the heading {s!r} verbatim")
    return rows, errors


def composition(name: str, rows: list[dict]) -> None:
    pages = {p for q in rows for p in q["gold_paths"]}
    print(f"{name}: {len(rows)} questions, {len(pages)} distinct gold pages, "
          f"{sum(bool(q['gold_sections']) for q in rows)} with section gold")
    for key in ("lang", "hops", "kind", "style", "split"):
        c = Counter(q.get(key, "-") for q in rows)
        print(f"  by {key}: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items(), key=str)))
    for key in ("lang", "hops", "style"):
        c = Counter((str(q.get(key, "-")), q["split"]) for q in rows)
        print(f"  {key} x split: " + ", ".join(f"{a}/{b}={v}" for (a, b), v in sorted(c.items())))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--questions", type=Path, action="append",
                    help="a question file (repeatable); default: questions.jsonl and questions_v2.jsonl")
    args = ap.parse_args()
    files = args.questions or [f for f in DEFAULT_FILES if f.is_file()]
    seen: set[str] = set()
    cache: dict = {}
    everything: list[dict] = []
    errors: list[str] = []
    for f in files:
        rows, errs = check(f, args.corpus, seen, cache)
        composition(f.name, rows)
        everything += rows
        errors += errs
    if len(files) > 1:
        composition("all files", everything)
    for e in errors:
        print("ERROR", e)
    print("FAIL" if errors else "OK")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
