"""API-identifier edges: a guide that calls an API reaches the reference section that defines it.

A reference section defines an identifier when its heading is that identifier and nothing else
(`createSlice`, `` `router.pushUrl` ``, `replaceReducer(nextReducer)`, `Vec::push`,
`<ClientOnly>`). A section on another page that names it, in its prose or its code blocks, gets
an `api` edge to that section (the graph is undirected: the reference reaches its guides too).

Only specific identifiers count: one with a member or path separator (`.`, `::`), an underscore,
or a capital inside a lower-case word, lower case after it (`pushUrl`, `useSelector`; not
`macOS`). A plain word heading (`nav`, `footer`, `back`, `Options`) defines nothing: guides use
those words for other things. Bounded work and hubs: an identifier defined by more than
MAX_DEFINERS sections is ambiguous and left out, one named by more than MAX_USERS sections says
nothing about any of them, and a section keeps the MAX_PER_SECTION most specific identifiers it
names (fewest users first). An edge's weight is 1 / log2(1 + the sections naming the
identifier), so that the walk's cost (`0.5 / weight`) grows with the log of the identifier's
degree, and PPR spreads less through hubs.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Iterable

# recorded in the index's meta: a change of the rules below rebuilds the edges of an unchanged index
RULES = "1"
MAX_DEFINERS = 4  # overloads of one API documented apart (`pushUrl` with and without options)
MAX_USERS = 200
MAX_PER_SECTION = 16
MIN_LENGTH = 4

_NAME = r"[A-Za-z_$][\w$]*"
# a dotted or `::` path of names; what a heading holds and what text is scanned for
_PATH = re.compile(rf"{_NAME}(?:(?:\.|::){_NAME})*")
_HEADING = re.compile(rf"^(?:new\s+)?(?P<id>{_NAME}(?:(?:\.|::){_NAME})*)(?:!|\s*\(.*\)|\s*<.*>)?$")
_TAG = re.compile(rf"^<(?P<id>{_NAME}(?:[.-]{_NAME})*)\s*/?>$")
_CAMEL = re.compile(r"[a-z0-9][A-Z]+[a-z]")  # pushUrl, not macOS or iOS (product names)
_FILE = re.compile(r"\.(?:md|mdx|js|jsx|ts|tsx|mjs|cjs|json|rs|toml|css|scss|html|vue|py|ya?ml|sh|ets|txt)$", re.I)


def specific(identifier: str, marked: bool = False) -> bool:
    """An identifier no prose uses by chance: a path (`a.b`, `a::b`), snake_case or camelCase
    (`pushUrl`); PascalCase (`ThreadPool`, `ClientOnly`) only when `marked` as code (backticks,
    angle brackets, a call's parentheses), as product names are PascalCase too (`TodoMVC`).
    Not a plain word (`nav`, `Options`), not a file name (`App.js`, a code block's caption)."""
    if len(identifier) < MIN_LENGTH or _FILE.search(identifier):
        return False
    if "." in identifier or "::" in identifier:
        return True
    core = identifier.strip("_$")
    if "_" in core:
        return True
    return bool(_CAMEL.search(core)) and (core[0].islower() or marked)


def defined_by(title: str) -> str | None:
    """The identifier a heading defines, or None: the heading is the identifier alone, maybe in
    backticks, with its call's arguments, a macro's `!` or a component's angle brackets."""
    t = title.strip()
    marked = "`" in t or "(" in t or t.startswith("<")
    t = t.replace("`", "").strip()
    m = _TAG.match(t) or _HEADING.match(t)
    if not m:
        return None
    ident = m.group("id")
    return ident if specific(ident, marked) else None


def _named(text: str) -> set[str]:
    """Every path of names in `text` and each of its tails (`store.dispatch` names `dispatch`
    too; `router.pushUrl(...)` names `pushUrl`)."""
    out: set[str] = set()
    for m in _PATH.finditer(text):
        parts = re.split(r"(\.|::)", m.group(0))
        for i in range(0, len(parts), 2):
            out.add("".join(parts[i:]))
    return out


def api_edges(sections: Iterable[tuple[int, str, str, str, str]],
              code: Iterable[tuple[int, str]] = ()) -> list[tuple[int, int, float]]:
    """(using section, defining section, weight) for every specific identifier a reference
    heading defines and a section on another page in the same language names; `sections` are
    (rowid, page, heading title, text, language), `code` (section rowid, code block text). A
    site translated into five languages defines each API five times: each guide reaches its own
    language's reference."""
    sections = list(sections)
    definers: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for rowid, page, title, _, language in sections:
        ident = defined_by(title)
        if ident:
            definers[(ident, language)].append((rowid, page))
    definers = {k: v for k, v in definers.items() if len(v) <= MAX_DEFINERS}
    if not definers:
        return []
    names = {ident for ident, _ in definers}
    texts: dict[int, list[str]] = {rowid: [text] for rowid, _, _, text, _ in sections}
    for rowid, body in code:
        texts.setdefault(rowid, []).append(body)
    where = {rowid: (page, language) for rowid, page, _, _, language in sections}
    users: dict[tuple[str, str], list[int]] = defaultdict(list)
    for rowid, parts in texts.items():
        page, language = where.get(rowid, ("", ""))
        for ident in _named("\n".join(parts)) & names:
            key = (ident, language)
            if any(p != page for _, p in definers.get(key, ())):
                users[key].append(rowid)
    users = {k: v for k, v in users.items() if len(v) <= MAX_USERS}
    per_section: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for key, rows in users.items():
        for rowid in rows:
            per_section[rowid].append(key)
    out: dict[tuple[int, int], float] = {}
    for rowid, keys in per_section.items():
        for key in sorted(keys, key=lambda k: (len(users[k]), k))[:MAX_PER_SECTION]:
            weight = 1.0 / max(1.0, math.log2(1 + len(users[key])))
            for d, page in definers[key]:
                if page != where[rowid][0]:  # two identifiers joining one pair: the more specific
                    out[(rowid, d)] = max(out.get((rowid, d), 0.0), weight)
    return [(s, d, w) for (s, d), w in sorted(out.items())]
