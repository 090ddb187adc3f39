"""A docs corpus N times the demo's, for building at scale: `python -m bench.replicate --copies 10 --out DIR`.

Copy k of every page goes to DIR/copy-k/<its path>, with its links and images as they are (so
jump edges stay inside a copy and the images are the same files, merged as the product merges
any repeated image). The texts that get vectors are made unique to their copy: each heading
(so every breadcrumb), each code block's first line and each table's header carry the copy's
number. Without that, `embed_pending` would reuse the first copy's vectors for every later one
(a text embedded before keeps its vector), and the build would measure nothing past the first
copy. What stays shared is what any corpus shares: the images, and a code block or table with
no heading above it whose summary is the same.

Then time the build as a user runs it, e.g.
`/usr/bin/time -v dgrag index DIR --db big.db` (wall time, peak resident memory), and compare its
seconds per page with the demo corpus's (docs/benchmarks.md, "A corpus ten times the demo's").
"""
from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "data" / "arkui-x-docs"
_FENCE = re.compile(r"^(\s*)(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


def mark(text: str, k: int) -> str:
    """`text` (one Markdown page) with copy `k`'s number in every heading, code block and table
    header, so none of its embedded texts equals another copy's."""
    lines = text.split("\n")
    out: list[str] = []
    fence = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(2)
            out += [line, f"copy {k}"]
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append(line)
            continue
        h = _HEADING.match(line)
        if h:
            out.append(f"{h.group(1)} {h.group(2)} (copy {k})")
        elif i + 1 < len(lines) and "|" in line and _TABLE_RULE.match(lines[i + 1]):
            out.append(line.replace("|", f"| copy {k} ", 1) if line.lstrip().startswith("|") else f"copy {k} {line}")
        else:
            out.append(line)
    return "\n".join(out)


def replicate(src: Path, out: Path, copies: int) -> int:
    """Write `copies` marked copies of every file of `src` under `out`; returns the pages written."""
    pages = 0
    for k in range(1, copies + 1):
        dest = out / f"copy-{k}"
        for f in sorted(src.rglob("*")):
            if not f.is_file():
                continue
            target = dest / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.suffix.lower() == ".md":
                target.write_text(mark(f.read_text(encoding="utf-8"), k), encoding="utf-8")
                pages += 1
            else:
                shutil.copyfile(f, target)
    return pages


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--src", type=Path, default=DOCS)
    args = ap.parse_args(argv)
    print(f"{replicate(args.src, args.out, args.copies)} pages in {args.out}")


if __name__ == "__main__":
    main()
