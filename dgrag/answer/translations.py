"""Translations in step: the same page in each language tree of a bilingual site (`en/...` beside
`zh-cn/...`), the pages with no counterpart, and the counterparts that drifted apart.

Pages pair in three passes, each only over the pages the earlier ones left alone:
1. by path: the same path under each tree's folder (`en/a/b.md` <-> `zh-cn/a/b.md`);
2. by links: a page whose links (out and in), mapped through the pairs found so far, are those
   of a page in the other tree (Jaccard >= LINK_JACCARD over >= 2 shared pages, best both ways);
3. by meaning: the pages' vectors (the index's embedder; the packaged multilingual-e5 puts a page
   and its translation closest: docs/benchmarks.md, "The gap report and translation gaps") best
   both ways, at least PAGE_COSINE, and ahead of the runner-up by PAGE_MARGIN.
A pair drifts when the two pages no longer say the same things: API headings (identifiers,
with their `<sup>20+</sup>` version marks) only in one, a version mark that differs, or a count
of headings or code blocks that differs by more than COUNT_SLACK. The API headings one side
lacks are the sections with no counterpart (the zh-cn tree's `display.isFoldable20+`).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

LANGUAGE_DIR = re.compile(r"^[a-z]{2}(?:[-_][A-Za-z]{2,4})?$")
LINK_JACCARD = 0.5
PAGE_COSINE = 0.85   # e5 cosines sit high: unrelated pages of one site score ~0.75-0.8
PAGE_MARGIN = 0.02
COUNT_SLACK = 1      # a heading or code block more or fewer is a translator's choice; two is drift
_SUP = re.compile(r"<sup>\s*([^<]*?)\s*</?sup>", re.I)  # "<sup>19+<sup>": a typo the docs have
_TRAILING_MARK = re.compile(r"(\d+\+)$")
_API = re.compile(r"^[A-Za-z_$@][\w$@.]*(?:\(.*\))?(?:<[\w, ]*>)?$", re.ASCII)
# what a zh-cn heading adds after the name it documents ("GestureMask枚举说明", "BridgePlugin类")
_CJK_SUFFIX = re.compile(r"(?:类|接口|代理)?(?:对象|枚举|类型)?(?:说明)?$")
_NUMBER_MARK = re.compile(r"\d+\+?")
# reference pages' prose headings that can carry a version mark ("### Attributes<sup>10+</sup>")
_PROSE = frozenset("attributes properties methods events parameters example examples description enums types".split())


@dataclass
class Heading:
    text: str          # as written, the version mark removed
    mark: str          # the version mark ("20+"), "" without one
    api: str           # the API it documents ("display.isFoldable"), "" for prose
    id: str
    url: str
    breadcrumb: str


@dataclass
class Page:
    path: str
    tree: str          # the language folder ("en", "zh-cn")
    rel: str           # the path inside it
    headings: list[Heading] = field(default_factory=list)
    code_blocks: int = 0


def heading_of(line: str) -> tuple[str, str, str] | None:
    """(text, version mark, API name) of a Markdown heading line, None for another line."""
    m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
    if not m:
        return None
    raw = m.group(1).strip()
    while len(raw) > 4 and raw[:2] == raw[-2:] and raw[:2] in ("**", "__"):  # "## **Name<sup>18+</sup>**"
        raw = raw[2:-2].strip()
    raw = raw.strip("`")
    marks = _SUP.findall(raw)
    text = _SUP.sub("", raw).strip()
    if not marks:
        trail = _TRAILING_MARK.search(text)
        if trail and not text[:trail.start()].endswith(" "):
            marks, text = [trail.group(1)], text[:trail.start()]
    numbers = [m.group(0) for m in map(_NUMBER_MARK.fullmatch, marks) if m]
    mark = numbers[-1] if numbers else ""  # "(deprecated)" / "(废弃)" are not versions
    plain = _CJK_SUFFIX.sub("", text.replace("\\", "").strip()).strip()
    looks_api = plain.lower() not in _PROSE and _API.match(plain) is not None and (
        mark != "" or any(c in plain for c in ".(") or re.search(r"[a-z][A-Z][a-z]", plain) is not None)
    return text, mark, plain if looks_api else ""


def tree_of(path: str) -> tuple[str, str] | None:
    """(language folder, path inside it), None for a page outside any language tree."""
    head, sep, rest = path.partition("/")
    return (head, rest) if sep and LANGUAGE_DIR.match(head) else None


def pages_of(store) -> dict[str, Page]:
    """Every page inside a language tree, with its headings and code-block count."""
    pages: dict[str, Page] = {}
    for path, kind, nid, _line, first, url, crumb in store.nodes.page_outline():
        where = tree_of(path)
        if where is None:
            continue
        page = pages.get(path) or pages.setdefault(path, Page(path, *where))
        if kind == "code":
            page.code_blocks += 1
            continue
        got = heading_of(first)
        if got is not None:
            page.headings.append(Heading(got[0], got[1], got[2], nid, url, crumb))
    return pages


# ---- pairing ------------------------------------------------------------------------------
def pair_pages(store, pages: dict[str, Page], vectors: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """([(page, counterpart, how)], [pages with none]): every tree's pages against the largest
    tree's (the one most pages are written in first). `vectors`: (file rowids, matrix), else
    the store's file vectors."""
    trees = Counter(p.tree for p in pages.values())
    if len(trees) < 2:
        return [], []
    main = max(trees, key=lambda t: (trees[t], t == "en", t))
    pairs: list[tuple[str, str, str]] = []
    alone: list[str] = []
    for other in sorted(t for t in trees if t != main):
        a = sorted(p for p, pg in pages.items() if pg.tree == main)
        b = sorted(p for p, pg in pages.items() if pg.tree == other)
        found = _by_path(pages, a, b)
        found += _by_links(store, pages, a, b, found)
        found += _by_meaning(store, a, b, found, vectors)
        pairs += found
        taken = {x for x, _, _ in found} | {y for _, y, _ in found}
        alone += [p for p in a + b if p not in taken]
    return pairs, sorted(set(alone) - {x for x, _, _ in pairs} - {y for _, y, _ in pairs})


def _by_path(pages, a, b) -> list[tuple[str, str, str]]:
    rel_b = {pages[p].rel: p for p in b}
    return [(p, rel_b[pages[p].rel], "path") for p in a if pages[p].rel in rel_b]


def _unpaired(a, b, found):
    taken = {x for x, _, _ in found} | {y for _, y, _ in found}
    return [p for p in a if p not in taken], [p for p in b if p not in taken]


def _by_links(store, pages, a, b, found) -> list[tuple[str, str, str]]:
    left, right = _unpaired(a, b, found)
    if not left or not right:
        return []
    twin = {x: y for x, y, _ in found}
    near: dict[str, set[str]] = defaultdict(set)
    for src, dst in store.edges.page_links():
        if src in pages and dst in pages:
            near[src].add(dst)
            near[dst].add(src)
    mapped = {p: {twin[q] for q in near[p] if q in twin} for p in left}

    def score(x, y):
        shared = len(mapped[x] & near[y])
        union = len(mapped[x] | near[y])
        return shared / union if shared >= 2 else 0.0

    return _mutual_best(left, right, score, LINK_JACCARD, 0.0, "links")


def _by_meaning(store, a, b, found, vectors) -> list[tuple[str, str, str]]:
    left, right = _unpaired(a, b, found)
    if not left or not right:
        return []
    ids, mat = vectors if vectors is not None else store.vectors.matrix("file")
    path_of = store.nodes.file_rowids()
    row_of = {path_of.get(int(r)): i for i, r in enumerate(ids)}
    left = [p for p in left if p in row_of]
    right = [p for p in right if p in row_of]
    if not left or not right:
        return []
    sims = mat[[row_of[p] for p in left]] @ mat[[row_of[p] for p in right]].T
    at_l, at_r = {p: i for i, p in enumerate(left)}, {p: i for i, p in enumerate(right)}
    return _mutual_best(left, right, lambda x, y: float(sims[at_l[x], at_r[y]]), PAGE_COSINE, PAGE_MARGIN, "meaning")


def _mutual_best(left, right, score, floor: float, margin: float, how: str) -> list[tuple[str, str, str]]:
    """Pairs that are each other's best, at least `floor`, ahead of both runners-up by `margin`."""
    table = np.array([[score(x, y) for y in right] for x in left], dtype=np.float64)
    out = []
    for i, x in enumerate(left):
        j = int(np.argmax(table[i]))
        best = table[i, j]
        if best < floor or int(np.argmax(table[:, j])) != i:
            continue
        runner_row = np.partition(table[i], -2)[-2] if len(right) > 1 else -np.inf
        runner_col = np.partition(table[:, j], -2)[-2] if len(left) > 1 else -np.inf
        if best - max(runner_row, runner_col) >= margin:
            out.append((x, right[j], how))
    return out


# ---- drift --------------------------------------------------------------------------------
def _by_api(page: Page) -> dict[str, list[Heading]]:
    out: dict[str, list[Heading]] = defaultdict(list)
    for h in page.headings:
        if h.api:
            out[h.api].append(h)
    return out


def _match(mine: list[Heading], theirs: list[Heading]) -> tuple[list, list[Heading], list[Heading]]:
    """One API's headings on both sides: the same version mark pairs first (an overload, a
    method of the same name in another class), then in order; (mark pairs that differ, the
    headings left on each side)."""
    left, right = list(mine), list(theirs)
    for h in list(left):
        twin = next((x for x in right if x.mark == h.mark), None)
        if twin is not None:
            left.remove(h)
            right.remove(twin)
    n = min(len(left), len(right))
    return list(zip(left[:n], right[:n])), left[n:], right[n:]


def drift(a: Page, b: Page) -> dict:
    """How two counterparts differ: API headings one lacks, version marks, counts."""
    apis_a, apis_b = _by_api(a), _by_api(b)
    marks, only_a, only_b = [], [], []
    for api in sorted(set(apis_a) | set(apis_b)):
        differ, rest_a, rest_b = _match(apis_a.get(api, []), apis_b.get(api, []))
        marks += [{"api": api, a.tree: x.mark, b.tree: y.mark} for x, y in differ]
        only_a += rest_a
        only_b += rest_b
    out = {"headings": {a.tree: len(a.headings), b.tree: len(b.headings)},
           "code_blocks": {a.tree: a.code_blocks, b.tree: b.code_blocks},
           "only_in": {a.tree: _listed(a, only_a), b.tree: _listed(b, only_b)},
           "version_marks": marks}
    out["drifted"] = bool(only_a or only_b or marks or abs(len(a.headings) - len(b.headings)) > COUNT_SLACK
                          or abs(a.code_blocks - b.code_blocks) > COUNT_SLACK)
    return out


def _listed(page: Page, headings: list[Heading]) -> list[dict]:
    """Headings in the page's reading order."""
    ids = {h.id for h in headings}
    return [{"api": h.api, "mark": h.mark, "heading": h.text + (h.mark and f" {h.mark}"), "id": h.id, "url": h.url}
            for h in page.headings if h.id in ids]


def translation_gaps(store, vectors=None) -> dict:
    """The pairs, the pages with no counterpart, and the drifted pairs with what differs."""
    pages = pages_of(store)
    pairs, alone = pair_pages(store, pages, vectors)
    drifted = []
    for x, y, how in pairs:
        d = drift(pages[x], pages[y])
        if d["drifted"]:
            drifted.append({"pages": [x, y], "paired_by": how, **d})
    trees = sorted({p.tree for p in pages.values()})
    return {"trees": trees, "pages": len(pages), "pairs": len(pairs),
            "paired_by": dict(Counter(how for _, _, how in pairs)),
            "pair_list": [list(p) for p in pairs if p[2] != "path"],
            "no_counterpart": [{"page": p, "tree": pages[p].tree} for p in alone],
            "drifted": drifted,
            "sections_without_counterpart": sum(len(v) for d in drifted for v in d["only_in"].values())}


# ---- an answer's citation in the asker's language ------------------------------------------
def counterpart_section(store, path: str, section_id: str, language: str, twin: str = "",
                        trees: list[str] | None = None) -> tuple | None:
    """The section of `path`'s counterpart in `language` ('en' / 'zh') that matches the section
    `section_id`, as `page_sections` rows are: (id, breadcrumb, url, line, language); None when
    the page is already in that language, has no counterpart page, or the match is unsure. The
    counterpart page is `twin` when given, else the same path in that language's tree. A section
    matches by its API heading (same name, same occurrence); another by its rank among the
    sections without one, where both pages have as many of those. `trees`: the index's language
    folders, when the caller has them already."""
    where = tree_of(path)
    if where is None or where[0].lower().startswith(language.lower()):
        return None
    if not twin:
        other = next((t for t in (trees or _trees(store)) if t.lower().startswith(language.lower())), None)
        if other is None:
            return None
        twin = f"{other}/{where[1]}"
    mine, theirs = store.nodes.page_sections(path), store.nodes.page_sections(twin)
    at = next((i for i, row in enumerate(mine) if row[0] == section_id), None)
    if at is None or not theirs:
        return None
    key = _api_key(mine, at)
    if key is not None:
        match = [i for i in range(len(theirs)) if _api_key(theirs, i) == key]
        return theirs[match[0]] if match else None
    prose_mine = [i for i in range(len(mine)) if _api_key(mine, i) is None]
    prose_theirs = [i for i in range(len(theirs)) if _api_key(theirs, i) is None]
    if len(prose_mine) != len(prose_theirs):
        return None
    return theirs[prose_theirs[prose_mine.index(at)]]


def with_counterparts(store, refs: list[dict], language: str) -> list[dict]:
    """The references (dicts with `id`, `type`), each section from another language's tree given
    `counterpart` ({id, breadcrumb, source_url}): the same section in the asker's `language`."""
    if store is None:
        return refs
    trees: list[str] = []
    for ref in refs:
        node = store.nodes.by_id(ref["id"]) if ref.get("type") == "chunk" else None
        where = tree_of(node.get("source_path") or "") if node else None
        if where is None or where[0].lower().startswith(language.lower()):
            continue
        trees = trees or _trees(store)
        got = counterpart_section(store, node["source_path"], ref["id"], language, trees=trees)
        if got is not None:
            ref["counterpart"] = {"id": got[0], "breadcrumb": got[1], "source_url": got[2]}
    return refs


def _api_key(rows, i) -> tuple[str, int] | None:
    """(the API a section documents, which occurrence of it), from its breadcrumb's last part."""
    def api(row):
        got = heading_of("# " + row[1].split(" / ")[-1])
        return got[2] if got else ""

    name = api(rows[i])
    return (name, sum(1 for r in rows[:i] if api(r) == name)) if name else None


def _trees(store) -> list[str]:
    return sorted({w[0] for p in set(store.nodes.file_rowids().values()) if (w := tree_of(p))})
