"""Which offline-OpenIE packs a corpus gets: read from what its pages show, or forced by a setting.

A page shows a pack when its fenced code blocks are in one of the pack's languages (```rust), it
names a file of one of its types (src/main.rs), or it uses one of its terms (ArkUI-X). A pack is
chosen when at least max(MIN_PAGES, MIN_SHARE x pages) pages show it; the site generator
(dgrag/ingest/site.py) counts as half that many for the packs that name it (mdbook: rust). The
choice, with its evidence, is recorded in the index file (meta "openie_packs") and shown by
`dgrag stats`.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from .openie_packs import BASE, load_pack, pack_names, resolve

MIN_PAGES = 2
MIN_SHARE = 0.02
_FENCE = re.compile(r"(?m)^[ \t]{0,3}(?:`{3,}|~{3,})[ \t]*\{?\.?([A-Za-z0-9_+#-]+)")
_URL = re.compile(r"https?://[^\s)>\]]+|www\.[^\s)>\]]+")       # a host name (vercel.cc) is no file
_FILE = re.compile(r"(?<=\w)\.([A-Za-z][A-Za-z0-9]{0,9})\b(?![\w(])")   # main.rs, lib.d.ts: its type


@dataclass(frozen=True)
class PackChoice:
    """The packs a corpus gets: `packs` with base and what they require, `chosen` the ones its
    pages showed (or the forced list), `evidence` the pages that showed each pack."""
    packs: tuple[str, ...]
    chosen: tuple[str, ...]
    forced: bool = False
    pages: int = 0
    generator: str = ""
    languages: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"packs": list(self.packs), "chosen": list(self.chosen), "forced": self.forced,
                "pages": self.pages, "generator": self.generator, "languages": self.languages,
                "evidence": self.evidence}

    @classmethod
    def from_dict(cls, d: dict) -> "PackChoice":
        """The choice as `as_dict` recorded it (the index file's meta)."""
        return cls(tuple(d.get("packs", ())), tuple(d.get("chosen", ())), bool(d.get("forced")),
                   int(d.get("pages", 0)), str(d.get("generator", "")), dict(d.get("languages", {})),
                   dict(d.get("evidence", {})))

    def describe(self) -> str:
        """One line: the packs and why (`dgrag stats`)."""
        how = "forced by the setting" if self.forced else (
            ", ".join(f"{p} {self.evidence.get(p, 0)} pages" for p in self.chosen) or "no platform shown")
        return f"{', '.join(self.packs)} ({how}; of {self.pages} pages)"


def page_signals(markdown: str) -> tuple[set[str], set[str]]:
    """(code block languages, file types named) of a page's Markdown."""
    prose = _URL.sub(" ", markdown) if "://" in markdown or "www." in markdown else markdown
    return ({m.group(1).lower() for m in _FENCE.finditer(markdown)}, {m.group(1).lower() for m in _FILE.finditer(prose)})


@lru_cache(maxsize=8)
def _detectors() -> tuple[tuple[str, frozenset[str], frozenset[str], tuple, re.Pattern | None, frozenset[str]], ...]:
    """(pack, code languages, file types, terms, their pattern, generators) of every platform pack."""
    out = []
    for name in pack_names():
        if name == BASE:
            continue
        d = load_pack(name).detect
        terms = d.get("terms", ())
        pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, terms)) + r")(?![\w-])") if terms else None
        out.append((name, frozenset(d.get("code", ())), frozenset(d.get("extensions", ())), terms, pattern,
                    frozenset(d.get("generators", ()))))
    return tuple(out)


# a chunk's packs by its text: the progressive build chooses again after each slice of pages
@lru_cache(maxsize=65536)
def shown_by(markdown: str) -> frozenset[str]:
    """The packs one piece of Markdown shows."""
    langs, exts = page_signals(markdown)
    return frozenset(name for name, code, types, terms, pattern, _ in _detectors()
                     if langs & code or exts & types
                     or (any(t in markdown for t in terms) and pattern.search(markdown)))   # substring first: fast


def choose_packs(pages: Iterable[tuple[str, str]], generator: str = "", forced: str = "",
                 languages: Iterable[str] = ()) -> PackChoice:
    """The packs for a corpus of (page, Markdown) pairs (a page's sections may come as several
    pairs). `forced`: a comma-separated list of pack names that replaces the choice ("base": no
    platform pack); an unknown name is a PackError."""
    langs_count = dict(Counter(lang for lang in languages if lang))
    if forced.strip():
        names = [n.strip() for n in forced.split(",") if n.strip()]
        packs = resolve(names)                    # raises PackError on an unknown name
        return PackChoice(packs, tuple(n for n in names if n != BASE), True, generator=generator,
                          languages=langs_count)
    shown: dict[str, set[str]] = {name: set() for name, *_ in _detectors()}
    page_set: set[str] = set()
    for page, markdown in pages:
        page_set.add(page)
        for name in shown_by(markdown):
            shown[name].add(page)
    need = max(MIN_PAGES, math.ceil(MIN_SHARE * len(page_set)))
    evidence = {n: len(p) for n, p in shown.items() if p}
    chosen = tuple(sorted(name for name, *_, generators in _detectors()
                          if len(shown[name]) + (need / 2 if generator in generators else 0) >= need))
    return PackChoice(resolve(chosen), chosen, False, len(page_set), generator, langs_count, evidence)
