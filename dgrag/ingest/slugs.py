"""Heading anchors as each docs generator writes them: the slug rule, and how it numbers a
heading whose slug is taken already.

One `Slugger` per page (anchors are unique within a page). An explicit id (`{#id}`,
`{ #id }`) is kept as written and still reserves its slug, as the generators do. The rules,
from each generator's own code:

- `python-markdown` (mkdocs, Python-Markdown's toc `slugify`): NFKD, ASCII only, drop what is
  not a word character, space or hyphen, lower-case, runs of spaces and hyphens -> "-";
  duplicates get "_1", "_2". A CJK-only heading slugs to "" and becomes "_1".
- `pymdownx` (pymdownx.slugs.slugify, which mkdocs-material sites configure for CJK): the
  same without the ASCII step, so Han characters stay.
- `github` (github-slugger: Docusaurus, Starlight): lower-case, drop what is not a letter,
  mark, number, connector, space or hyphen, every space -> "-"; duplicates "-1", "-2".
- `gitbook` (GitBook's Git Sync): the anchor element GitBook writes into a heading, `## Title
  <a href="#x" id="x"></a>`, is its id (a translated page keeps the original's: `## 入门 <a
  href="#getting-started" ...>`); a heading without one gets the `github` rule, which is an
  assumption: GitBook does not document its rule.
- `vitepress` (@mdit-vue/shared's slugify): NFKD, combining marks, control characters and
  ASCII punctuation / whitespace runs -> "-", trimmed, a leading digit gets "_";
  duplicates "-1", "-2".
- `mdbook` (mdBook's normalize_id): keep alphanumerics, "_" and "-", whitespace -> "-",
  ASCII lower-case; duplicates "-1", "-2".
- `goldmark` (Hugo's default `autoHeadingIDType = "github"`): trimmed, each space or hyphen ->
  "-", letters, digits and "_" lower-cased, anything else dropped; an empty one is "heading";
  duplicates "-1", "-2".
- `docutils` (Sphinx): the section id its permalink uses: ASCII `[a-z0-9]+` joined by "-",
  leading digits dropped; an empty or taken one becomes "id1", "id2", ... (one counter per
  page), and a `(label)=` target before the heading is its id, made from the label by the same
  rule (docutils' make_id: `(syntax/roles)=` -> "syntax-roles") before the heading's own.
"""
from __future__ import annotations

import html
import re
import unicodedata

_PM_DROP = re.compile(r"[^\w\s-]", re.UNICODE)
_PM_JOIN = re.compile(r"[-\s]+")
_VP_SPECIAL = re.compile(r"""[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:"'“”‘’<>,.?/]+""")
_VP_CONTROL = re.compile(r"[\u0000-\u001f]")
_DU_NON_ID = re.compile(r"[^a-z0-9]+")
_ANCHOR_ID = re.compile(r"""<a\b[^>]*?\bid\s*=\s*["']([^"']+)["']""", re.I)


def slug_python_markdown(text: str) -> str:
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = _PM_DROP.sub("", value).strip().lower()
    return _PM_JOIN.sub("-", value)


def slug_pymdownx(text: str) -> str:
    value = _PM_DROP.sub("", unicodedata.normalize("NFC", text)).strip().lower()
    return _PM_JOIN.sub("-", value)


def slug_github(text: str) -> str:
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def slug_vitepress(text: str) -> str:
    value = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    value = _VP_SPECIAL.sub("-", _VP_CONTROL.sub("", value))
    value = re.sub(r"-{2,}", "-", value).strip("-")
    value = re.sub(r"^(\d)", r"_\1", value)
    return value.lower()


def slug_mdbook(text: str) -> str:
    out = []
    for ch in text:
        if ch.isalnum() or ch in "_-":
            out.append(ch.lower())
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def slug_goldmark(text: str) -> str:
    out = []
    for ch in text.strip():
        if ch in " -":
            out.append("-")
        elif ch == "_" or unicodedata.category(ch)[0] == "L" or unicodedata.category(ch) == "Nd":
            out.append(ch.lower())
    return "".join(out) or "heading"


def slug_docutils(text: str) -> str:
    value = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"^[-0-9]+|-+$", "", _DU_NON_ID.sub("-", " ".join(value.split())))


RULES = {
    "python-markdown": (slug_python_markdown, "_"),
    "pymdownx": (slug_pymdownx, "_"),
    "github": (slug_github, "-"),
    "gitbook": (slug_github, "-"),  # and a heading's own `<a href="#x" id="x"></a>` is its anchor
    "vitepress": (slug_vitepress, "-"),
    "mdbook": (slug_mdbook, "-"),
    "goldmark": (slug_goldmark, "-"),
    "docutils": (slug_docutils, "-"),
}


class Slugger:
    """Anchors of one page, in document order, numbered as `rule`'s generator numbers them."""

    def __init__(self, rule: str):
        if rule not in RULES:
            raise ValueError(f"unknown slug rule {rule!r} ({', '.join(RULES)})")
        self.rule = rule
        self._slug, self._sep = RULES[rule]
        self.used: set[str] = set()
        self.auto = 0  # docutils' "idN" counter

    def anchor(self, text: str, explicit: str | None = None) -> str:
        if explicit:
            if self.rule == "docutils":  # the target's id first, then the heading's own (counted all the same)
                explicit = self._docutils(explicit)
                self._docutils(text)
                return explicit
            self.used.add(explicit)
            return explicit
        if self.rule == "docutils":
            return self._docutils(text)
        base = self._slug(text)
        if self._sep == "_":  # Python-Markdown's toc.unique: "x" -> "x_1", "x_1" -> "x_2"
            slug = base
            while slug in self.used or not slug:
                m = re.match(r"^(.*)_([0-9]+)$", slug)
                slug = f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"
        else:  # github-slugger / markdown-it-anchor / mdBook: "x", "x-1", "x-2"
            slug, n = base, 0
            while slug in self.used:
                n += 1
                slug = f"{base}-{n}"
        self.used.add(slug)
        return slug

    def element_id(self, html_parts: list[str]) -> str:
        """GitBook: the id of the anchor element in a heading's inline HTML (`<a href="#x" id="x">`),
        its explicit anchor; other rules have none."""
        if self.rule != "gitbook":
            return ""
        m = next((m for part in html_parts if (m := _ANCHOR_ID.search(part))), None)
        return html.unescape(m.group(1)) if m else ""

    def _docutils(self, text: str) -> str:
        slug = slug_docutils(text)
        while not slug or slug in self.used:
            self.auto += 1
            slug = f"id{self.auto}"
        self.used.add(slug)
        return slug
