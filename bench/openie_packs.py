"""How many offline facts of a docs site name one of the site's own identifiers or terms.

    python -m bench.openie_packs /work/idx/rust-book.db [--docs /work/sites/rust-book] [--sample 50]

Runs the offline OpenIE as `enrich --step openie` does (every chunk of the index, its
document-frequency stop-entities, the per-chunk caps; the packs chosen from the corpus where the
code has packs) on a read-only copy of the chunks, and scores the facts against the site's
vocabulary, read from its Markdown sources:

* a **site term** is an inline code span, an identifier of a fenced code block (`foo`,
  `Rc::clone`, `store.dispatch`, and each of their dotted / `::` parts), a file name in the
  prose (src/main.rs), a heading, or an emphasised term (**x**, *x*, _x_); compared as
  `normalize_entity` keys;
* a fact **counts** when its head or its tail is a site term other than its own section's
  headings (so "(Heading, mentions, X)" counts for X only).

The figure is the share of facts that count. Run it with PYTHONPATH at another checkout to
measure that code: the script works with the extractor before packs too. `--sample N` prints N
facts picked at random (seeded), each with its verdict, for reading by hand.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.enrich import steps
from dgrag.enrich.heuristic_openie import normalize_entity
from dgrag.store import Store

_FENCE = re.compile(r"(?ms)^[ \t]*(```+|~~~+)[^\n]*\n(.*?)^[ \t]*\1")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:::|\.)[A-Za-z_$][A-Za-z0-9_$]*)*")
_HEADING = re.compile(r"(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
_EMPHASIS = re.compile(r"\*\*([^*\n]{2,60})\*\*|(?<![\w*])\*([^*\n]{2,60})\*(?![\w*])|(?<!\w)_([^_\n]{2,60})_(?!\w)")
_FILE = re.compile(r"(?<![\w/.-])[\w./-]+\.[A-Za-z][A-Za-z0-9]{0,5}\b")


def _keys(name: str) -> set[str]:
    key = normalize_entity(name)
    return {key} if len(key) >= 2 else set()


def _clean_heading(h: str) -> str:
    h = re.sub(r"\s*\{:?\s*[#.][^{}]*\}\s*$", "", h)
    return re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", h).strip()


def site_terms(docs: Path) -> set[str]:
    """The normalised identifiers and terms of every Markdown page under `docs`."""
    terms: set[str] = set()
    for path in sorted(docs.rglob("*.md")):
        if "node_modules" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in _FENCE.finditer(text):
            for ident in _IDENT.findall(m.group(2)):
                terms |= _keys(ident)
                for part in re.split(r"::|\.", ident):
                    terms |= _keys(part)
        prose = _FENCE.sub(" ", text)
        for m in _CODE_SPAN.finditer(prose):
            terms |= _keys(m.group(2).strip())
        for m in _HEADING.finditer(prose):
            terms |= _keys(_clean_heading(m.group(1)))
        for m in _EMPHASIS.finditer(prose):
            terms |= _keys(next(g for g in m.groups() if g))
        for m in _FILE.finditer(prose):
            terms |= _keys(m.group(0))
    return terms


def site_facts(db: Path) -> tuple[list[tuple[str, str, str, str]], str]:
    """(head, relation, tail, breadcrumb) of every offline fact, and the packs used ("" before packs)."""
    with Store(db, readonly=True) as store:
        nodes = store.nodes.by_rowids(store.nodes.of_type(("chunk",)))
        site = json.loads(store.meta.get("site") or "{}")
    settings = Settings()
    choose = getattr(steps, "corpus_pack_choice", None)
    if choose is None:                          # the extractor before packs
        one, packs = steps.offline_openie_for_corpus(nodes, settings), ""
    else:
        from dgrag.enrich.openie_packs import lexicon

        choice = choose(nodes, settings, site.get("generator", ""))
        one, packs = steps.offline_openie_for_corpus(nodes, settings, lexicon(choice.packs)), choice.describe()
    facts = []
    for n in nodes:
        if len(steps.openie_input(n).strip()) >= 20:
            facts += [(h, r, t, n["breadcrumb"]) for h, r, t in one(n)["triples"]]
    return facts, packs


def verdict(fact: tuple[str, str, str, str], terms: set[str]) -> bool:
    head, _, tail, crumb = fact
    own = {normalize_entity(_clean_heading(c)) for c in crumb.split(" / ")}
    return any(k in terms and k not in own for x in (head, tail) for k in _keys(x))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", type=Path, help="an index of the site (its chunks are read, never written)")
    ap.add_argument("--docs", type=Path, help="the site's Markdown sources (default: the index's docs root)")
    ap.add_argument("--sample", type=int, default=0, help="print this many facts at random with their verdicts")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dump", type=Path, help="write every fact with its verdict here (JSON lines)")
    a = ap.parse_args(argv)
    with Store(a.db, readonly=True) as store:
        docs = a.docs or Path(store.meta.get("docs_root") or ".")
    terms = site_terms(docs)
    facts, packs = site_facts(a.db)
    good = sum(verdict(f, terms) for f in facts)
    print(f"{a.db.name}: packs {packs or '(none: the extractor before packs)'}")
    print(f"site terms: {len(terms)} (code spans, code identifiers, file names, headings, emphasis of {docs})")
    print(f"facts whose head or tail is a site term other than their section's heading: "
          f"{good}/{len(facts)} = {good / max(1, len(facts)):.1%}")
    if a.dump:
        a.dump.write_text("".join(json.dumps([*f, verdict(f, terms)], ensure_ascii=False) + "\n" for f in facts),
                          encoding="utf-8")
    if a.sample:
        rng = random.Random(a.seed)
        for f in rng.sample(facts, min(a.sample, len(facts))):
            print(f"  {'+' if verdict(f, terms) else '-'} ({f[0]}, {f[1]}, {f[2]})    [{f[3]}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
