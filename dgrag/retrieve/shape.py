"""A section's shape, read from its Markdown alone: how much of its own text is prose.

Two kinds of section match a question by their heading and hold no answer:
- a heading with no text of its own (`## Store Methods`, then straight to `### dispatch`): the
  answer is in a sub-section, which is a candidate of its own;
- a link list (`- [Using ACE Tools](ace.md)` / `- [References](ref.md)`, an overview's table of
  links): it names the pages that answer, and the page it links to is the answer.
Both are recognised by structure, not words, so the rule holds in every language: `prose_share`
is 0 for the first, the share of the lines that are not links for the second, 1 for prose.

A third kind answers only questions about versions: release notes. A changelog page is long
(FastAPI's is half its English Markdown) and names every feature once per release, so its
sections match any question by its words. It is known by its headings (`release_sections`):
several releases' version headings, most of its sections under one.
"""
from __future__ import annotations

import re

import numpy as np

from ..kernels.tokens import IDEOGRAPH, RELEASE_HEADING, release_page, tokenize

# a section with fewer visible characters of its own than this is a heading alone ("Coming soon.")
MIN_BODY_CHARS = 20
# a line is a link line when, its links taken out, at most this many words are left ("- [Store](a.md)",
# "| [dispatch](b.md) | sends an action |"); a sentence with a long link in it is prose
LINK_LINE_WORDS = 3

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\([^)]*\)|<a\s[^>]*>(.*?)</a>", re.IGNORECASE)  # images are not links
_TAG = re.compile(r"<[^>]+>|&nbsp;|&#160;")
_WORDS = re.compile(r"\w+", re.UNICODE)


def prose_share(text: str) -> float:
    """1 - the share of the section's own lines that are link lines; 0 for a heading alone
    (its first line, when a Markdown heading, is not its own text)."""
    lines = text.split("\n")
    if lines and _HEADING.match(lines[0]):
        lines = lines[1:]
    own = [line for line in lines if _TAG.sub("", line).strip()]
    if sum(len(_TAG.sub("", line).strip()) for line in own) < MIN_BODY_CHARS:
        return 0.0
    links = sum(_is_link_line(line) for line in own)
    return 1.0 - links / len(own)


def _is_link_line(line: str) -> bool:
    if not _LINK.search(line):
        return False
    return len(_WORDS.findall(_TAG.sub("", _LINK.sub(" ", line)))) <= LINK_LINE_WORDS


# a question about versions or changes: a version number, or one of these words (en, zh)
_VERSION = re.compile(r"(?<![\w.])(?:[vV]\d+(?:\.\d+)*|\d+\.\d+(?:\.\d+)*)(?![\w.]*\w)")
_RELEASE_WORDS = frozenset({"version", "versions", "release", "released", "releases", "changelog", "deprecated",
                            "deprecation", "breaking", "upgrade", "upgrading", "upgraded"})
_RELEASE_ZH = ("版本", "发布", "更新日志", "变更", "弃用", "废弃", "升级")


def release_sections(crumbs: list[list[str]], pages: np.ndarray) -> np.ndarray:
    """For each section (its breadcrumb's headings, its page's index in `pages`): True where its
    page is release notes (`kernels.tokens.release_page`)."""
    under = np.array([any(RELEASE_HEADING.match(h.strip()) for h in c) for c in crumbs], dtype=bool)
    out = np.zeros(len(crumbs), dtype=bool)
    for page in np.unique(pages[under]).tolist() if under.any() else []:
        at = pages == page
        if page >= 0 and release_page([c for c, a in zip(crumbs, at) if a]):
            out[at] = True
    return out


def asks_about_releases(question: str) -> bool:
    """A question that names a version or asks what changed: release notes may answer it."""
    if _VERSION.search(question):
        return True
    if IDEOGRAPH.search(question) and any(w in question for w in _RELEASE_ZH):
        return True
    return bool(_RELEASE_WORDS.intersection(tokenize(question)))
