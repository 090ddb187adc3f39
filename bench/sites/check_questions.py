#!/usr/bin/env python3
"""Validate the held-out question sets for the nine public documentation sites.

    python3 bench/sites/check_questions.py [--sites-root /work/sites] [--site redux ...]
    python3 bench/sites/check_questions.py --sections vitepress docs/en/guide/deploy.md

Standalone (standard library only; it does not import dgrag). For each site file
(bench/sites/<site>/questions.jsonl, site in redux, vitepress, rust-book, myst-parser,
hugo-docs, starlight, sqlmodel, beefree, dify-zh) it checks:

- every line is a JSON object with the required fields and allowed values
  (lang en|zh, kind, style search|natural, split dev|test, hops 1|2);
- ids are unique and shaped "<site>-NNN" (vitepress: "vp-en-NNN" / "vp-zh-NNN";
  myst-parser: "myst-NNN"; hugo-docs: "hugo-NNN"; starlight: "sl-en-NNN" / "sl-zh-NNN";
  sqlmodel: "sqlm-NNN"; beefree: "bee-NNN"; dify-zh: "dify-zh-NNN", Chinese only),
  and the id's language matches "lang";
- split is "dev" exactly when the id's number is a multiple of 3, "test" otherwise;
- every gold path exists under <sites-root>/<site> and lies in the published content
  (redux: docs/; vitepress: docs/en/ for en and docs/zh/ for zh; rust-book: src/;
  myst-parser: docs/; hugo-docs: content/en/, never the headless snippets under
  content/en/_common/ nor the glossary's term pages, which Hugo does not render;
  starlight: .md / .mdx pages under docs/src/content/docs/, for en outside the locale
  folders (de/, es/, zh-cn/, ...), for zh under docs/src/content/docs/zh-cn/;
  sqlmodel (MkDocs Material): .md pages under docs/, never the code under docs_src/ that
  the pages include; beefree (GitBook, Git Sync): only the .md pages linked from the table of
  contents SUMMARY.md ("[Title](path.md)", relative to the site root of .gitbook.yaml), since
  GitBook publishes no other page; dify-zh, GitBook too: the .md pages that zh_CN/SUMMARY.md
  links, the .gitbook.yaml having "root: ./zh_CN/", so gold paths start with zh_CN/);
- every gold section is a breadcrumb of one of the gold pages (page title, then the
  heading path, joined by " / "), computed by the small heading scanner below;
- every gold page holds at least one gold section;
- hops 2 only with two or more distinct gold pages;
- no question merely repeats one of its gold headings.

Prints counts per site by lang / hops / kind / style / split and exits 1 on any problem.
`--sections SITE PATH` prints the breadcrumbs the scanner computes for one page.

Breadcrumb rules: the page title is the text of the page's first H1 ("# ...") if it has
one, otherwise the front matter "title:", otherwise (pages with neither, like the Rust
book's section pages that open with "## Name") the page's first heading. Headings inside fenced code blocks (``` or ~~~,
closed by a fence of the same character at least as long), inside an HTML comment block
("<!--" at the start of a line up to the line holding "-->") and inside the front matter
are not headings; on the MyST site (myst-parser) neither are those inside a `:::{directive}`
colon fence (MyST makes them rubrics); on the Hugo site (hugo-docs) the title is always
the front matter "title:" (Hugo renders it as the H1; the Markdown has none) and lines inside
a {{< code-toggle >}} / {{< highlight >}} shortcode block are not headings; on the Starlight
site (starlight) the title is always the front matter "title:" (the pages have no H1), MDX
`import` / `export` lines are skipped, code fences may be indented (inside <Tabs> / <Steps>
children) and headings inside a `:::note` / `:::tip` / `:::caution` / `:::danger` aside are
not section headings (headings in Markdown inside a component's children are); on the SQLModel
site (sqlmodel, MkDocs Material with attr_list) headings may carry a trailing "{ #some-id }"
attribute, which is stripped like on every site, and `/// tip` ... `///` admonition blocks,
`//// tab | ...` blocks and `{* ./docs_src/... *}` / `{!./docs_src/...!}` code includes need no
special handling (no heading sits inside an admonition, and included code is not scanned); on the
GitBook sites (beefree, dify-zh) the title is the page's first H1 (every published page has one),
code fences may be indented (inside list items; a {% code %} ... {% endcode %} block wraps a fence,
which is what hides its lines) or open on a list item's marker line ("  * ```", closed by an
indented "    ```": dify-zh's API-extension pages write their examples so), and the anchor
element GitBook appends to many headings ("## Name <a href="#name" id="name"></a>") is an HTML
tag, removed like any other. Heading text is cleaned: trailing closing #'s and attribute/anchor
suffixes ("{#id}", "{ #id }", "{#id .class}") are stripped, code spans keep their text without the
backticks, links and images keep their text, HTML/JSX tags are removed, emphasis markers
(** __ * _) are removed, backslash escapes and HTML entities are resolved, and runs of
whitespace collapse to one space. The title is the root; every other heading is placed
under the nearest earlier heading of a smaller level (or directly under the title).
"""
from __future__ import annotations

import argparse
import html
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITES = ("redux", "vitepress", "rust-book", "myst-parser", "hugo-docs", "starlight", "sqlmodel",
         "beefree", "dify-zh")
REQUIRED = ("id", "lang", "question", "gold_paths", "gold_sections", "hops", "kind",
            "split", "style")
KINDS = {"howto", "api", "concept", "troubleshoot", "config", "keyword"}
STYLES = {"search", "natural"}
LANGS = {"en", "zh"}
ID_RE = {
    "redux": re.compile(r"redux-(\d{3,})"),
    "vitepress": re.compile(r"vp-(en|zh)-(\d{3,})"),
    "rust-book": re.compile(r"rust-book-(\d{3,})"),
    "myst-parser": re.compile(r"myst-(\d{3,})"),
    "hugo-docs": re.compile(r"hugo-(\d{3,})"),
    "starlight": re.compile(r"sl-(en|zh)-(\d{3,})"),
    "sqlmodel": re.compile(r"sqlm-(\d{3,})"),
    "beefree": re.compile(r"bee-(\d{3,})"),
    "dify-zh": re.compile(r"dify-zh-(\d{3,})"),
}
BILINGUAL_IDS = {"vitepress", "starlight"}  # ids carry the language: "<prefix>-<lang>-NNN"
ID_LANG = {"dify-zh": "zh"}  # one-language sites whose ids name the language: "dify-zh-NNN"
# Published content per site and language.
PREFIXES = {
    ("redux", "en"): ("docs/",),
    ("vitepress", "en"): ("docs/en/",),
    ("vitepress", "zh"): ("docs/zh/",),
    ("rust-book", "en"): ("src/",),
    ("myst-parser", "en"): ("docs/",),
    ("hugo-docs", "en"): ("content/en/",),
    ("starlight", "en"): ("docs/src/content/docs/",),
    ("starlight", "zh"): ("docs/src/content/docs/zh-cn/",),
    ("sqlmodel", "en"): ("docs/",),
    ("beefree", "en"): ("",),  # GitBook: any .md page that SUMMARY.md links (checked below)
    ("dify-zh", "zh"): ("zh_CN/",),  # GitBook, root ./zh_CN/ (SUMMARY.md checked below)
}
# Page file extensions per site (default: .md or .mdx). SQLModel's MkDocs site publishes only
# .md pages (docs_src/ holds the Python code the pages include; it lies outside docs/).
PAGE_EXTS = {"sqlmodel": (".md",), "beefree": (".md",), "dify-zh": (".md",)}
# Starlight: the locale folders of docs/astro.config.mjs ("root" is English, at the top level);
# an English gold page must not lie in any of them.
STARLIGHT_LOCALES = ("de", "es", "ja", "fr", "it", "id", "zh-cn", "pt-br", "pt-pt", "ko", "tr",
                     "ru", "hi", "da", "uk", "fa")
EXCLUDED_LANG = {
    ("starlight", "en"): tuple(f"docs/src/content/docs/{loc}/" for loc in STARLIGHT_LOCALES),
}
# Never published: headless snippets that other pages include, and the glossary's term pages
# (the glossary's cascade sets build.render never; only its _index.md is a page).
EXCLUDED = {
    "hugo-docs": ("content/en/_common/", "content/en/quick-reference/glossary/"),
}
EXCLUDED_OK = {"content/en/quick-reference/glossary/_index.md"}
MYST_SITES = {"myst-parser"}  # Sphinx + MyST: headings inside `:::{directive}` blocks are rubrics
# Hugo: the page title is always the front matter "title" (the Markdown has no H1), and the
# body of a {{< code-toggle >}} / {{< highlight >}} shortcode is code (YAML "# comments"
# there are no headings).
HUGO_SITES = {"hugo-docs"}
# Starlight (Astro, .md / .mdx): the title is always the front matter "title" (no H1), MDX
# import / export lines are code, fences may be indented inside component children, and a
# heading inside a `:::note` / `:::tip` / `:::caution` / `:::danger` aside is no section.
STARLIGHT_SITES = {"starlight"}
# GitBook (Git Sync): only the pages that the table of contents (SUMMARY.md under the
# .gitbook.yaml root) links are published; the title is the first H1, fences may be indented
# or open on a list item's marker line.
GITBOOK_SITES = {"beefree", "dify-zh"}
SITE_LANGS = {"redux": {"en"}, "vitepress": {"en", "zh"}, "rust-book": {"en"}, "myst-parser": {"en"},
              "hugo-docs": {"en"}, "starlight": {"en", "zh"}, "sqlmodel": {"en"}, "beefree": {"en"},
              "dify-zh": {"zh"}}

# ---------------------------------------------------------------------------
# Heading scanner

FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
CODE_SC_RE = re.compile(r"^\s*\{\{[<%]-?\s*(code-toggle|highlight)\b.*?(/)?\s*-?[>%]\}\}\s*$")
CODE_SC_END = r"^\s*\{{\{{[<%]-?\s*/\s*{}\s*-?[>%]\}}\}}\s*$"
COLON_RE = re.compile(r"^ {0,3}(:{3,})(\{[\w:.-]+\}.*)?\s*$")  # MyST `:::{note}` ... `:::`
SL_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")  # Starlight: fences indented in JSX
# GitBook: fences indented inside list items, and a fence that opens on the list item's own line
# ("  * ```" then the code, closed by an indented "    ```"), as GitBook writes code in lists.
GB_FENCE_RE = re.compile(r"^[ \t]*(?:(?:[*+-]|\d{1,9}[.)])[ \t]+)*(`{3,}|~{3,})(.*)$")
SL_ASIDE_RE = re.compile(r"^[ \t]*(:{3,})(note|tip|caution|danger)\b.*$")
SL_ASIDE_END = re.compile(r"^[ \t]*(:{3,})[ \t]*$")
MDX_ESM_RE = re.compile(r"^(import|export)\b")
ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
ATTR_RE = re.compile(r"\s*\{\s*#[^{}]*\}\s*$")
CLOSING_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
CODE_RE = re.compile(r"(`+)(.+?)\1", re.S)
IMG_RE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
LINK_RE = re.compile(r"\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
TAG_RE = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s+[^<>]*?)?\s*/?>")
EMPH_RE = re.compile(r"(\*\*|__)(.+?)\1|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"
                     r"|(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)")
ESC_RE = re.compile(r"\\([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


def clean_heading(text: str) -> str:
    """Rendered text of an ATX heading's content."""
    text = text.strip()
    text = CLOSING_RE.sub("", text) if not re.fullmatch(r"#+", text) else ""
    text = ATTR_RE.sub("", text)
    # Protect code spans: their text is kept verbatim (minus the backticks).
    spans: list[str] = []

    def keep(m: re.Match) -> str:
        spans.append(m.group(2).strip() if m.group(2).strip() else m.group(2))
        return f"\x00{len(spans) - 1}\x00"

    text = CODE_RE.sub(keep, text)
    text = IMG_RE.sub(r"\1", text)
    text = LINK_RE.sub(r"\1", text)
    text = TAG_RE.sub("", text)
    prev = None
    while prev != text:
        prev = text
        text = EMPH_RE.sub(lambda m: next(g for g in m.groups()[1:] if g is not None), text)
    text = ESC_RE.sub(r"\1", text)
    text = html.unescape(text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)
    return re.sub(r"\s+", " ", text).strip()


def front_matter(lines: list[str]) -> tuple[dict, int]:
    """(simple key: value pairs, index of the first body line)."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    meta: dict = {}
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return meta, i + 1
        m = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", lines[i])
        if m:
            v = m.group(2).strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            meta[m.group(1)] = v
    return {}, 0  # unterminated: not front matter


def headings(text: str, myst: bool = False, hugo: bool = False,
             starlight: bool = False,
             gitbook: bool = False) -> tuple[dict, list[tuple[int, str, int]]]:
    """(front matter, [(level, cleaned text, 1-based line)]) outside code fences (and, `myst`,
    outside MyST colon-fence directives: MyST turns a heading inside one into a rubric; and,
    `hugo`, outside {{< code-toggle >}} / {{< highlight >}} shortcode blocks; and, `starlight`,
    outside `:::note` ... `:::` asides and MDX import / export lines, with indented fences;
    `gitbook`: fences may be indented, as inside list items, or open right after a list
    marker, "* ```")."""
    lines = text.splitlines()
    meta, start = front_matter(lines)
    out: list[tuple[int, str, int]] = []
    fence: tuple[str, int] | None = None
    comment = False
    colons: list[int] = []  # the open `:::{name}` directives' marker lengths
    shortcode: re.Pattern | None = None  # the open code shortcode's closing tag
    asides: list[int] = []  # Starlight: the open asides' marker lengths
    fence_re = GB_FENCE_RE if gitbook else SL_FENCE_RE if starlight else FENCE_RE
    for i in range(start, len(lines)):
        line = lines[i]
        if starlight and fence is None and not comment:
            if MDX_ESM_RE.match(line):
                continue
            am = SL_ASIDE_RE.match(line)
            if am:
                asides.append(len(am.group(1)))
                continue
            am = SL_ASIDE_END.match(line)
            if am and asides and len(am.group(1)) >= asides[-1]:
                asides.pop()
                continue
        if shortcode is not None:
            if shortcode.match(line):
                shortcode = None
            continue
        if hugo and fence is None:
            sm = CODE_SC_RE.match(line)
            if sm:
                if not sm.group(2):  # not self-closing ({{< code-toggle config=x />}})
                    shortcode = re.compile(CODE_SC_END.format(re.escape(sm.group(1))))
                continue
        if comment:  # inside an HTML comment block: no headings until "-->"
            comment = "-->" not in line
            continue
        cm = COLON_RE.match(line) if myst and fence is None else None
        if cm and cm.group(2):
            colons.append(len(cm.group(1)))
            continue
        if cm and colons and len(cm.group(1)) >= colons[-1]:
            colons.pop()
            continue
        fm = fence_re.match(line)
        if fence is None and re.match(r"^ {0,3}<!--", line):
            comment = "-->" not in line[line.index("<!--") + 4:]
            continue
        if fence is None:
            if fm and not (fm.group(1)[0] == "`" and "`" in fm.group(2)):
                fence = (fm.group(1)[0], len(fm.group(1)))
                continue
            hm = ATX_RE.match(line)
            if hm and not colons and not asides:
                out.append((len(hm.group(1)), clean_heading(hm.group(2) or ""), i + 1))
        elif fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= fence[1] \
                and not fm.group(2).strip():
            fence = None
    return meta, out


def page_breadcrumbs(path: Path, myst: bool = False, hugo: bool = False,
                     starlight: bool = False, gitbook: bool = False) -> list[str]:
    """All breadcrumbs of a page: the title, then one per heading (in page order).

    Title: the first H1; else the front matter "title:" (on a Hugo site, `hugo`, always the
    front matter "title:": Hugo renders it as the page's H1); else (mdBook pages such as the
    Rust book's, which start with "## Section name" and have no front matter) the page's
    first heading, which then acts as the root, and later headings at its level or above
    become its children. Starlight pages (`starlight`) likewise always take the front matter
    "title:" (Starlight renders it as the H1). GitBook pages (`gitbook`) take the first H1
    like the default; only their fences may be indented or follow a list marker.
    """
    meta, hs = headings(path.read_text(encoding="utf-8"), myst, hugo, starlight, gitbook)
    fm_title = hugo or starlight
    root = None if fm_title else next((i for i, h in enumerate(hs) if h[0] == 1), None)
    if fm_title and clean_heading(meta.get("title", "")):
        title = clean_heading(meta["title"])
    elif root is not None:
        title = hs[root][1]
    elif clean_heading(meta.get("title", "")):
        title = clean_heading(meta["title"])
    elif hs:
        root, title = 0, hs[0][1]
    else:
        title = path.stem
    crumbs = [title]
    stack: list[tuple[int, str]] = []  # headings below the title
    for i, (level, text, _) in enumerate(hs):
        if i == root:
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        crumbs.append(" / ".join([title] + [t for _, t in stack]))
    return crumbs


# ---------------------------------------------------------------------------
# Question checks


SUMMARY_LINK_RE = re.compile(r"\[[^\]]*\]\(<?([^)<>\s]+?\.md)>?(?:\s+\"[^\"]*\")?\)")


def gitbook_pages(site_dir: Path) -> set[str]:
    """Pages a GitBook (Git Sync) site publishes: the .md files its SUMMARY.md links, as paths
    relative to the site folder (the .gitbook.yaml "root:", and its "structure: summary:")."""
    root, summary = "", "SUMMARY.md"
    cfg = site_dir / ".gitbook.yaml"
    if cfg.is_file():
        section = None
        for line in cfg.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^(\s*)([\w-]+):\s*(.*?)\s*$", line)
            if not m:
                continue
            value = m.group(3).strip("'\"")
            if not m.group(1):
                section = m.group(2)
                if m.group(2) == "root" and value:
                    root = value
            elif section == "structure" and m.group(2) == "summary" and value:
                summary = value
    base = Path(root.strip("/").removeprefix("./")) if root.strip("./") else Path()
    f = site_dir / base / summary
    pages: set[str] = set()
    if f.is_file():
        for m in SUMMARY_LINK_RE.finditer(f.read_text(encoding="utf-8")):
            link = m.group(1).split("#")[0]
            if "://" not in link:
                pages.add((base / (f.parent.relative_to(site_dir / base)) / link).as_posix()
                          .removeprefix("./"))
    return pages


def norm(s: str) -> str:
    return re.sub(r"[\W_]+", "", s.lower())


def check_site(site: str, qfile: Path, root: Path, cache: dict) -> tuple[list[dict], list[str]]:
    errors: list[str] = []
    rows: list[dict] = []
    seen: set[str] = set()
    if not qfile.is_file():
        return rows, [f"{qfile}: missing"]
    published = gitbook_pages(root / site) if site in GITBOOK_SITES else None
    for n, line in enumerate(qfile.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{site} line {n}"
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: not JSON ({e})")
            continue
        if not isinstance(q, dict):
            errors.append(f"{where}: not a JSON object")
            continue
        missing = [k for k in REQUIRED if k not in q]
        if missing:
            errors.append(f"{where}: missing {missing}")
            continue
        where = f"{q['id']} ({site} line {n})"
        rows.append(q)
        if q["id"] in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(q["id"])
        m = ID_RE[site].fullmatch(str(q["id"]))
        if not m:
            errors.append(f"{where}: id does not match {ID_RE[site].pattern}")
        else:
            if site in BILINGUAL_IDS and m.group(1) != q["lang"]:
                errors.append(f"{where}: id language {m.group(1)} != lang {q['lang']}")
            if site in ID_LANG and ID_LANG[site] != q["lang"]:
                errors.append(f"{where}: id language {ID_LANG[site]} != lang {q['lang']}")
            num = int(m.groups()[-1])
            if num < 1:
                errors.append(f"{where}: ids are numbered from 001")
            if q["split"] != ("dev" if num % 3 == 0 else "test"):
                errors.append(f"{where}: split must be dev exactly for numbers divisible by 3")
        if q["lang"] not in SITE_LANGS[site]:
            errors.append(f"{where}: lang {q['lang']!r} not allowed for {site}")
        if q["kind"] not in KINDS:
            errors.append(f"{where}: kind {q['kind']!r} not in {sorted(KINDS)}")
        if q["style"] not in STYLES:
            errors.append(f"{where}: style {q['style']!r} not in {sorted(STYLES)}")
        if q["split"] not in ("dev", "test"):
            errors.append(f"{where}: split must be dev or test")
        if not isinstance(q["question"], str) or not q["question"].strip():
            errors.append(f"{where}: empty question")
            continue
        if not isinstance(q["gold_paths"], list) or not q["gold_paths"] \
                or not isinstance(q["gold_sections"], list) or not q["gold_sections"]:
            errors.append(f"{where}: gold_paths and gold_sections must be non-empty lists")
            continue
        npages = len(set(q["gold_paths"]))
        if q["hops"] not in (1, 2) or (q["hops"] == 2 and npages < 2):
            errors.append(f"{where}: hops {q['hops']!r} with {npages} gold page(s)")
        if npages != len(q["gold_paths"]):
            errors.append(f"{where}: duplicate gold path")
        crumbs: dict[str, set[str]] = {}
        prefixes = PREFIXES.get((site, q["lang"]), ())
        for p in q["gold_paths"]:
            if not p.startswith(prefixes) or not p.endswith(PAGE_EXTS.get(site, (".md", ".mdx"))):
                errors.append(f"{where}: gold page {p} is outside {prefixes}")
            if p.startswith(EXCLUDED.get(site, ())) and p not in EXCLUDED_OK:
                errors.append(f"{where}: gold page {p} is never rendered as a page")
            if p.startswith(EXCLUDED_LANG.get((site, q["lang"]), ())):
                errors.append(f"{where}: gold page {p} is not a {q['lang']} page")
            if published is not None and p not in published:
                errors.append(f"{where}: gold page {p} is not in the site's SUMMARY.md")
            f = root / site / p
            if not f.is_file():
                errors.append(f"{where}: gold path does not exist: {p}")
                continue
            if p not in cache:
                cache[p] = set(page_breadcrumbs(f, myst=site in MYST_SITES,
                                                hugo=site in HUGO_SITES,
                                                starlight=site in STARLIGHT_SITES,
                                                gitbook=site in GITBOOK_SITES))
            crumbs[p] = cache[p]
        for s in q["gold_sections"]:
            if crumbs and not any(s in c for c in crumbs.values()):
                errors.append(f"{where}: section {s!r} is not a breadcrumb of {list(crumbs)}")
        for p, c in crumbs.items():
            if not c & set(q["gold_sections"]):
                errors.append(f"{where}: no gold section belongs to {p}")
        qn = norm(q["question"])
        for s in q["gold_sections"]:
            if qn in (norm(s), norm(s.split(" / ")[-1])):
                errors.append(f"{where}: question repeats the heading {s!r} verbatim")
    return rows, errors


def composition(name: str, rows: list[dict]) -> None:
    pages = {p for q in rows for p in q["gold_paths"]}
    print(f"{name}: {len(rows)} questions, {len(pages)} distinct gold pages")
    for key in ("lang", "hops", "kind", "style", "split"):
        c = Counter(str(q.get(key, "-")) for q in rows)
        print(f"  by {key}: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())))
    for key in ("lang", "hops", "style"):
        c = Counter((str(q.get(key, "-")), q["split"]) for q in rows)
        print(f"  {key} x split: " + ", ".join(f"{a}/{b}={v}" for (a, b), v in sorted(c.items())))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites-root", type=Path, default=Path("/work/sites"),
                    help="folder holding redux/, vitepress/, rust-book/, myst-parser/, hugo-docs/, "
                         "starlight/, sqlmodel/, beefree/, dify-zh/ (default /work/sites)")
    ap.add_argument("--site", action="append", choices=SITES,
                    help="check only this site (repeatable); default all nine")
    ap.add_argument("--questions-dir", type=Path, default=HERE,
                    help="folder holding <site>/questions.jsonl (default: this script's folder)")
    ap.add_argument("--sections", nargs=2, metavar=("SITE", "PATH"),
                    help="print the breadcrumbs of one page and exit")
    args = ap.parse_args()
    if args.sections:
        site, rel = args.sections
        for c in page_breadcrumbs(args.sites_root / site / rel, myst=site in MYST_SITES,
                                  hugo=site in HUGO_SITES, starlight=site in STARLIGHT_SITES,
                                  gitbook=site in GITBOOK_SITES):
            print(c)
        return 0
    errors: list[str] = []
    for site in args.site or SITES:
        rows, errs = check_site(site, args.questions_dir / site / "questions.jsonl",
                                args.sites_root, {})
        composition(site, rows)
        errors += errs
    for e in errors:
        print("ERROR", e)
    print(f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
