"""A section's shape, read from its Markdown alone: how much of its own text is prose.

Two kinds of section match a question by their heading and hold no answer:
- a heading with no text of its own (`## Store Methods`, then straight to `### dispatch`): the
  answer is in a sub-section, which is a candidate of its own;
- a link list (`- [Using ACE Tools](ace.md)` / `- [References](ref.md)`, an overview's table of
  links): it names the pages that answer, and the page it links to is the answer.
Both are recognised by structure, not words, so the rule holds in every language: `prose_share`
is 0 for the first, the share of the lines that are not links for the second, 1 for prose.
"""
from __future__ import annotations

import re

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
