"""Digest of every offline-OpenIE call the enrichment makes on the two benchmark corpora.

Run it before and after a change that must not alter the extraction (a refactor), then compare:

    python -m bench.openie_identity --out /tmp/before.json
    python -m bench.openie_identity --out /tmp/after.json --compare /tmp/before.json

The calls are the ones `enrich --step openie` makes offline: every chunk of the whole ArkUI-X
corpus (data/arkui-x-docs, en + zh, read by dgrag's own parser, with and without its raw
Markdown) and every MuSiQue passage (as `import-passages` stores it), each corpus with the packs
it is given by default (openie_choice: chosen from what it shows). A digest hashes the full
output (entities with descriptions, triples, in order), before the per-chunk caps of steps.py.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.enrich import heuristic_openie
from dgrag.enrich.openie_packs import lexicon
from dgrag.enrich.steps import corpus_pack_choice, openie_input
from dgrag.ingest.markdown import parse_page
from dgrag.ingest.page import detect_language
from dgrag.ingest.pipeline import decode_page, list_pages
from dgrag.ingest.site import detect_site

ROOT = Path(__file__).resolve().parent.parent
ARKUI = ROOT / "data" / "arkui-x-docs"
MUSIQUE = Path("/work/shared/bench/musique/musique_train_corpus.json")


def _lang(node: dict) -> str:
    return "zh" if node.get("language") == "zh" else "en"


def _chunks(arkui: Path) -> list[dict]:
    out = []
    for path in list_pages(arkui):
        page = parse_page(path, decode_page((arkui / path).read_bytes()))
        out += [dict(n, source_path=path) for n in page.nodes if n["type"] == "chunk"]
    return out


def calls(arkui: Path = ARKUI, musique: Path = MUSIQUE):
    """(key, text, breadcrumb, language, raw_markdown, lexicon) of every call, in a fixed order."""
    chunks = _chunks(arkui)
    choice = corpus_pack_choice(chunks, Settings(), detect_site(arkui).generator)
    print(f"arkui-x: packs {choice.describe()}", file=sys.stderr)
    lex = lexicon(choice.packs)
    for n in chunks:
        args = (openie_input(n), n["breadcrumb"], _lang(n))
        yield f"arkui:{n['id']}", *args, n["text"], lex
        yield f"arkui-plain:{n['id']}", *args, None, lex
    if musique.exists():
        items = json.loads(musique.read_text(encoding="utf-8"))
        passages = [{"rowid": i, "source_path": str(i), "text": item["text"]} for i, item in enumerate(items)]
        choice = corpus_pack_choice(passages, Settings())
        print(f"musique: packs {choice.describe()}", file=sys.stderr)
        lex = lexicon(choice.packs)
        for idx, item in enumerate(items):
            text, title = item["text"], str(item.get("title") or f"passage {idx}")
            lang = "zh" if detect_language(text) == "zh" else "en"
            yield f"musique:{idx}", text[:6000], title, lang, text, lex


def digests() -> dict[str, str]:
    out: dict[str, str] = {}
    for key, text, crumb, lang, raw, lex in calls():
        result = heuristic_openie.extract(text, crumb, lang, raw, lex)
        blob = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        out[key] = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="where to write {call: digest}")
    ap.add_argument("--compare", help="a digest file written before; exit 1 on any difference")
    a = ap.parse_args(argv)
    now = digests()
    Path(a.out).write_text(json.dumps(now, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(now)} calls digested -> {a.out}")
    if not a.compare:
        return 0
    before = json.loads(Path(a.compare).read_text(encoding="utf-8"))
    missing = sorted(set(before) ^ set(now))
    diff = sorted(k for k in set(before) & set(now) if before[k] != now[k])
    print(f"compared {len(set(before) & set(now))} calls: {len(diff)} mismatches, {len(missing)} calls in one run only")
    for k in (diff + missing)[:20]:
        print("  ", k)
    return 1 if diff or missing else 0


if __name__ == "__main__":
    sys.exit(main())
