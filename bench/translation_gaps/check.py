"""Translation gaps on the ArkUI-X docs against the hand-checked list (expected.json).

    python bench/translation_gaps/check.py --db /work/idx/arkui.db [--json out.json]

Reports how many of the hand-checked entries the finder reports (the check: every one) and
what the finder reports in all (pairs, pages with no counterpart, drifted pairs, sections with
no counterpart, version marks that differ). Exit 1 when an expected entry is missing.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from dgrag.answer.translations import translation_gaps  # noqa: E402
from dgrag.store import Store  # noqa: E402


def check(found: dict, expected: dict) -> list[str]:
    """The expected entries the finder does not report, one line each."""
    by_page = {}
    for d in found["drifted"]:
        for p in d["pages"]:
            by_page[p.split("/", 1)[1]] = d
    missing = []
    reported = sorted(p["page"] for p in found["no_counterpart"])
    if reported != sorted(expected["no_counterpart"]):
        missing.append(f"pages with no counterpart: {reported} != {expected['no_counterpart']}")
    for e in expected["only_in"]:
        d = by_page.get(e["page"])
        side = d["only_in"].get(e["tree"], []) if d else []
        got = [x for x in side if x["api"] == e["api"] and x["mark"] == e["mark"]]
        if len(got) < e["count"]:
            missing.append(f"only in {e['tree']}: {e['page']} {e['api']} {e['mark']} x{e['count']} "
                           f"(reported {len(got)})")
    for e in expected["version_marks"]:
        d = by_page.get(e["page"])
        got = [m for m in (d["version_marks"] if d else []) if m["api"] == e["api"] and m.get("en") == e["en"]
               and m.get("zh-cn") == e["zh-cn"]]
        if not got:
            missing.append(f"version mark: {e['page']} {e['api']} en {e['en'] or '-'} / zh-cn {e['zh-cn'] or '-'}")
    return missing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="an index of data/arkui-x-docs (read only)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    expected = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    with Store(args.db, readonly=True) as st:
        found = translation_gaps(st)
    seconds = time.perf_counter() - t0
    missing = check(found, expected)
    n = len(expected["only_in"]) + len(expected["version_marks"]) + 1
    out = {"expected_entries": n, "reported": n - len(missing), "missing": missing, "seconds": round(seconds, 2),
           "pages": found["pages"], "pairs": found["pairs"], "paired_by": found["paired_by"],
           "no_counterpart": len(found["no_counterpart"]), "drifted_pairs": len(found["drifted"]),
           "sections_without_counterpart": found["sections_without_counterpart"],
           "version_marks_differing": sum(len(d["version_marks"]) for d in found["drifted"])}
    print(json.dumps(out, ensure_ascii=False, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
