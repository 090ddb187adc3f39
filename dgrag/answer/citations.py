"""Citations checked as the answer streams: `[n]` (or `[n, m]`) outside code must name a
reference in the numbered list; a number that does not is removed (and counted), so a user
never follows a dead citation. Text is held back only from a `[` until its `]` (at most a few
characters), and code (fenced blocks and `inline` spans) is passed through untouched.
"""
from __future__ import annotations

import re

_CITE_BODY = re.compile(r"[\d,，\s]")
_NUMBER = re.compile(r"\d+")
MAX_PENDING = 40


class CitationFilter:
    def __init__(self, valid: set[int]):
        self.valid = set(valid)
        self.removed: list[int] = []
        self.cited: list[int] = []
        self._pending = ""
        self._line = ""
        self._fence = False
        self._inline = False

    def feed(self, text: str) -> str:
        out = []
        for ch in text:
            out.append(self._char(ch))
        return "".join(out)

    def close(self) -> str:
        """What is still held back (an unterminated `[...`), as it was written."""
        rest, self._pending = self._pending, ""
        return rest

    # ---- one character at a time ------------------------------------------------------------
    def _char(self, ch: str) -> str:
        if self._pending == " ":  # a space is held in case a citation to remove follows it
            if ch == "[":
                self._pending = " ["
                return ""
            self._pending = ""
            return self._emit(" ") + self._char(ch)
        if self._pending:
            if ch == "]":
                bracket, self._pending = self._pending + ch, ""
                return self._resolve(bracket)
            if _CITE_BODY.match(ch) and len(self._pending) < MAX_PENDING:
                self._pending += ch
                return ""
            held, self._pending = self._pending, ""
            return self._emit(held) + self._char(ch)
        if ch in " [" and not self._fence and not self._inline:
            self._pending = ch
            return ""
        return self._emit(ch)

    def _emit(self, text: str) -> str:
        for ch in text:
            if ch == "\n":
                if self._line.lstrip().startswith(("```", "~~~")):
                    self._fence = not self._fence
                self._line, self._inline = "", False
            else:
                self._line += ch
                if ch == "`" and not self._fence and not self._line.lstrip().startswith("``"):
                    self._inline = not self._inline
        return text

    def _resolve(self, bracket: str) -> str:
        """`[n, m]` (after a held space, if any): kept, cut to its good numbers, or dropped
        with the space before it when none is good."""
        numbers = [int(x) for x in _NUMBER.findall(bracket)]
        if not numbers:  # "[ ]" or "[,]": not a citation
            return self._emit(bracket)
        good = [n for n in numbers if n in self.valid]
        self.removed += [n for n in numbers if n not in self.valid]
        self.cited += [n for n in good if n not in self.cited]
        if len(good) == len(numbers):
            return self._emit(bracket)
        lead = bracket[:bracket.index("[")]
        return self._emit(lead + "[" + ", ".join(map(str, good)) + "]") if good else ""


def check_citations(text: str, valid: set[int]) -> tuple[str, CitationFilter]:
    """The whole text at once: (cleaned text, the filter with `removed` and `cited`)."""
    f = CitationFilter(valid)
    return f.feed(text) + f.close(), f
