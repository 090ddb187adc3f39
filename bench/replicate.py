"""A docs corpus N times the demo's, for building at scale: `python -m bench.replicate --copies 10 --out DIR`.

Copy k of every page goes to DIR/copy-k/<its path>, with its links and images as they are (so
jump edges stay inside a copy and the images are the same files, merged as the product merges
any repeated image). The texts that get vectors are made unique to their copy: each heading
(so every breadcrumb), each code block's first line and each table's header carry the copy's
number. Without that, `embed_pending` would reuse the first copy's vectors for every later one
(a text embedded before keeps its vector), and the build would measure nothing past the first
copy. What stays shared is what any corpus shares: the images, and a code block or table with
no heading above it whose summary is the same.

With `--vary-prose`, every copy after the first also gets prose of its own, so that the offline
OpenIE finds other entities and facts in it (without it, each copy's prose is the demo's and
yields the demo's facts again). Words and CJK characters outside code are swapped for others
of the corpus by a permutation of the copy's own: a word of the same length and about the same
frequency, a CJK character of about the same frequency. What the OpenIE reads as grammar stays:
the words of its lexicons (verbs, stop words, phrase boundaries) and the 300 commonest words and 60
commonest characters are kept. Link targets, image paths and code blocks are left as they are.

Then time the build as a user runs it, e.g.
`/usr/bin/time -v dgrag index DIR --db big.db` (wall time, peak resident memory), and compare its
seconds per page with the demo corpus's (docs/benchmarks.md, "A corpus ten times the demo's").
"""
from __future__ import annotations

import argparse
import random
import re
import shutil
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "data" / "arkui-x-docs"
_FENCE = re.compile(r"^(\s*)(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_LEXICONS = ROOT / "dgrag" / "enrich" / "openie_words"
_WORD = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Za-z][a-z]+|[\u4e00-\u9fff]")  # CamelCase: each part
_KEEP = re.compile(r"\]\([^)]*\)|<[^>]*>|https?://\S+")  # link targets, tags, URLs
COMMON = 300  # the commonest words kept as they are
COMMON_CJK = 60  # and CJK characters (a few carry most of Chinese grammar: 的, 是, 在, ...)
BUCKET = 40  # a word is swapped within a group of this many of about its frequency


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


def _prose_lines(text: str):
    """(index, line) of the lines outside code fences."""
    fence = None
    for i, line in enumerate(text.split("\n")):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(2)
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
        else:
            yield i, line


def _kept_words() -> set[str]:
    """The lexicons' Latin words, and the CJK characters that are entries of their own (a
    character inside a lexicon's word is no boundary)."""
    from dgrag.enrich.openie_packs import all_words   # the demo's packs: programs, file types, labels too

    entries = [line.strip() for f in _LEXICONS.glob("*.txt") for line in f.read_text(encoding="utf-8").splitlines()
               if line and not line.startswith("#")]
    kept = set()
    for word in entries + sorted(all_words(("arkui-x",))):
        kept.update(w.lower() for w in _WORD.findall(word) if len(w) > 1 or len(word) == 1)
    return kept


def permutations(pages: list[str], copies: int, common: int = COMMON, common_cjk: int = COMMON_CJK
                 ) -> list[dict[str, str]]:
    """For each copy k (index k - 1), the word -> word swap of its prose; the first copy's is empty.
    The `common` commonest words and `common_cjk` commonest CJK characters are kept."""
    counts = Counter(w.lower() for text in pages for _, line in _prose_lines(text)
                     for part in _KEEP.split(line) for w in _WORD.findall(part))
    latin = Counter({w: n for w, n in counts.items() if w >= "a" and w[0] < "\u4e00"})
    cjk = Counter({w: n for w, n in counts.items() if w[0] >= "\u4e00"})
    kept = _kept_words() | {w for w, _ in latin.most_common(common)} | {w for w, _ in cjk.most_common(common_cjk)}
    groups: dict[tuple, list[str]] = {}
    for w, _ in counts.most_common():
        if w not in kept:
            key = ("cjk",) if len(w) == 1 and w >= "\u4e00" else ("latin", len(w))
            groups.setdefault(key, []).append(w)  # in order of frequency
    swaps = [{}]
    for k in range(2, copies + 1):
        rng, swap = random.Random(k), {}
        for words in groups.values():
            for at in range(0, len(words), BUCKET):
                block = words[at:at + BUCKET]
                shuffled = block[:]
                rng.shuffle(shuffled)
                swap.update(zip(block, shuffled))
        swaps.append(swap)
    return swaps


def vary(text: str, swap: dict[str, str]) -> str:
    """`text` with its prose's words swapped by `swap`, their case kept."""
    if not swap:
        return text

    def one(m: re.Match) -> str:
        w = m.group(0)
        new = swap.get(w.lower())
        if new is None:
            return w
        return new.upper() if w.isupper() and len(w) > 1 else new.capitalize() if w[0].isupper() else new

    lines = text.split("\n")
    for i, line in _prose_lines(text):
        parts = _KEEP.split(line)
        kept = _KEEP.findall(line)
        lines[i] = "".join(_WORD.sub(one, part) + (kept[j] if j < len(kept) else "") for j, part in enumerate(parts))
    return "\n".join(lines)


def replicate(src: Path, out: Path, copies: int, vary_prose: bool = False, common: int = COMMON) -> int:
    """Write `copies` marked copies of every file of `src` under `out`; returns the pages written."""
    pages = 0
    md = sorted(f for f in src.rglob("*.md") if f.is_file())
    swaps = (permutations([f.read_text(encoding="utf-8") for f in md], copies, common) if vary_prose
             else [{}] * copies)
    for k in range(1, copies + 1):
        dest = out / f"copy-{k}"
        for f in sorted(src.rglob("*")):
            if not f.is_file():
                continue
            target = dest / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.suffix.lower() == ".md":
                text = vary(f.read_text(encoding="utf-8"), swaps[k - 1])
                target.write_text(mark(text, k), encoding="utf-8")
                pages += 1
            else:
                shutil.copyfile(f, target)
    return pages


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--src", type=Path, default=DOCS)
    ap.add_argument("--vary-prose", action="store_true", help="prose of its own in every copy after the first")
    args = ap.parse_args(argv)
    print(f"{replicate(args.src, args.out, args.copies, args.vary_prose)} pages in {args.out}")


if __name__ == "__main__":
    main()
