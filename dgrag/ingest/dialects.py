"""The Markdown dialects docs sites are written in, as markdown-it-py plugins.

mdit-py-plugins brings front matter, `!!!` admonitions, `:::` containers, MyST blocks and
definition lists; the rest are small block and core rules of the same parser:

- heading attributes: `## Title {#id}`, `## Title { #id .cls }` -> the id, the title clean;
- `///` blocks (pymdownx.blocks: `/// tip | Title`, `//// tab | Python 3.10+`): a block rule
  closing each at a fence of exactly its own length, as pymdownx does (`/// details` holds
  `//// tab` blocks), never inside a code fence;
- a fence's info as pymdownx.superfences reads it (`fence_language`): `{ .python .annotate }`,
  `python hl_lines="2"`, `hl_lines="2"` alone;
- `=== "Label"` tabs (pymdownx.tabbed), indented like admonitions;
- `::: package.name` (mkdocstrings' generated reference) -> an `autodoc` token;
- template tags and Hugo's shortcodes and TOML front matter: `shortcodes.py`;
- MDX: `import` / `export` statements at the top level -> an `mdx_esm` token;
- MyST (Sphinx): roles (`{ref}`text <label>``) -> `myst_role` tokens; a directive written as a
  fence whose body is Markdown (```` ```{note} ````, ```` ```{tab-item} Title ````) is parsed in
  place between `myst_directive_open` / `_close` tokens, as MyST parses it; a directive's
  `:option:` lines (fenced, or `:::` -> a `myst_options` token) are dropped; a literal one
  (code, math, includes, reST, generated reference) stays a fence; the site's
  `myst_enable_extensions` add `{#id .class}` attributes (attrs_block, attrs_inline) and field
  lists (`:name: body`, fieldlist).

`parser(myst=..., heading_ids=..., extensions=...)` builds (once) the parser for a page.
"""
from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.attrs import attrs_block_plugin, attrs_plugin
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.field_list import fieldlist_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

from .shortcodes import (TEMPLATE_TAG, block_line, code_shortcode, marker, shortcode_inline, shortcode_lines,
                         toml_front_matter)

ADMONITIONS = {"note", "tip", "info", "warning", "danger", "caution", "important", "details", "success",
               "question", "failure", "bug", "example", "quote", "abstract", "seealso", "attention", "error",
               "hint", "todo", "summary", "tldr", "check", "done", "help", "faq", "fail", "missing", "cite",
               "admonition", "versionadded", "versionchanged", "deprecated", "aside", "secondary", "experimental"}
_ATTRS = re.compile(r"\s*\{:?([^{}]*)\}\s*$")  # a heading's trailing {...}; its parts: _ATTR_PART
_ATTR_PART = re.compile(r"""[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'}]+)""")
_ATTR_ITEM = r"""(?:[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'}]+))"""
_ATTR_LINE = re.compile(r"^\{:?\s*" + _ATTR_ITEM + r"(?:\s+" + _ATTR_ITEM + r")*\s*\}\s*$")  # `{.lead #intro}` alone
_CONTAINER_NAME = re.compile(r"^\s*\{?([A-Za-z][\w-]*)\}?(?:\[[^\]]*\]|\{[^}]*\})?(?:\s|$)")
_AUTODOC = re.compile(r"^:::\s+([A-Za-z_]\w*(?:\.\w+)+)\s*$")
_BLOCK_START = re.compile(r"^(/{3,})\s*[A-Za-z][\w-]*\s*(?:\|.*)?$")  # pymdownx.blocks
_BLOCK_END = re.compile(r"^(/{3,})\s*$")
_CODE_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_FENCE_ATTRS = re.compile(r"^\{\s*(?:[.#][\w-]|[\w-]+=)")
_TABBED = re.compile(r'^===[+!]?\s+"([^"]*)"\s*$')
# MyST directives whose body is Markdown, parsed in place: admonitions, layout (sphinx-design's
# tabs, cards, grids, dropdowns), figures' captions, list tables, and every domain directive
# (`py:function`, `proof:theorem`). Any other directive keeps its body as a code block, as an
# unknown directive's body is not Markdown to MyST either (`plot`, `doctest`, `jupyter-execute`,
# `code-block`, `math`, `toctree`, `eval-rst`); `autoclass` and its kind are generated.
MARKDOWN_DIRECTIVES = {
    "admonition", "attention", "caution", "danger", "error", "hint", "important", "note", "seealso", "tip",
    "warning", "todo", "versionadded", "versionchanged", "versionremoved", "deprecated",
    "topic", "sidebar", "margin", "epigraph", "pull-quote", "highlights", "compound", "container", "div",
    "only", "glossary", "centered", "hlist", "rst-class", "figure", "table", "list-table",
    "tab-set", "tab-item", "card", "card-carousel", "grid", "grid-item", "grid-item-card", "dropdown",
    "exercise", "solution"}
IMAGE_DIRECTIVES = {"figure", "image"}  # the argument is the picture's path, not a title
# Sphinx extensions' directives whose body is code to run or show, and its language
CODE_DIRECTIVES = {**dict.fromkeys(("plot", "doctest", "testcode", "testsetup", "testcleanup", "jupyter-execute",
                                    "ipython", "exec"), "python"), "testoutput": "text",
                   **dict.fromkeys(("program-output", "command-output", "prompt"), "console")}


def directive_of(info: str) -> tuple[str, str] | None:
    """A MyST directive fence's (name, argument): ```{note} Title -> ("note", "Title")."""
    m = _DIRECTIVE.match((info or "").strip())
    return (m.group(1).lower(), m.group(2).strip()) if m else None


def markdown_bodied(name: str) -> bool:
    name = name.lower()
    return name in MARKDOWN_DIRECTIVES or (":" in name and not name.split(":")[-1].startswith("auto"))


_DIRECTIVE = re.compile(r"^\{([\w:.-]+)\}\s*(.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:(?:\s|$)")
_ROLE_TITLE = re.compile(r"^(.+?)\s*<([^<>]+)>$", re.S)
_ESM = re.compile(r"^(?:import\s+[\w{*'\"]|import\s*\(|export\s+(?:default|const|let|var|function|\{|\*|async))")


def heading_attrs(state) -> None:
    """Core rule: a heading's trailing `{#id .class key=value}` becomes its attributes."""
    tokens = state.tokens
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or i + 1 >= len(tokens) or tokens[i + 1].type != "inline":
            continue
        inline = tokens[i + 1]
        m = _ATTRS.search(inline.content)
        parts = _ATTR_PART.findall(m.group(1)) if m else []
        if not parts or _ATTR_PART.sub("", m.group(1)).strip():
            continue  # only an attribute list, nothing else between the braces ("{T}" is a title's)
        inline.content = inline.content[:m.start()].rstrip()
        for part in parts:
            if part.startswith("#"):
                tok.attrSet("id", part[1:])


def option_lines(lines: list[str]) -> int:
    """How many of a MyST directive's first body lines are its options: `:key: value` lines, or
    a `---` YAML block."""
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        return end + 1 if end is not None else 0
    n = 0
    while n < len(lines) and _OPTION.match(lines[n]):
        n += 1
    return n


def _directive_tokens(state, tokens: list) -> list:
    """`tokens` with each Markdown-bodied directive fence parsed in place (nested ones too)."""
    out = []
    for tok in tokens:
        d = directive_of(tok.info) if tok.type == "fence" else None
        if not d or not markdown_bodied(d[0]):
            out.append(tok)
            continue
        lines = tok.content.split("\n")
        n = option_lines(lines)
        opener = Token("myst_directive_open", "div", 1, info=tok.info.strip(), markup=tok.markup,
                       level=tok.level, meta={"options": n})
        opener.map = [tok.map[0], tok.map[1] - 1] if tok.map else None  # [opening line, closing line]
        body: list = []
        state.md.block.parse("\n".join(lines[n:]), state.md, state.env, body)
        shift = tok.map[0] + 1 + n if tok.map else 0
        for child in body:
            child.map = [child.map[0] + shift, child.map[1] + shift] if child.map else None
            child.level += tok.level + 1
        out += [opener, *_directive_tokens(state, body),
                Token("myst_directive_close", "div", -1, level=tok.level)]
    return out


def _options_rule(state, start: int, end: int, silent: bool) -> bool:
    """MyST: a `:::{name}` directive's `:option:` lines (or `---` YAML block), right after its
    opening line -> a `myst_options` token (markup, not text)."""
    prev = state.tokens[-1] if state.tokens else None
    if prev is None or prev.type != "container_adm_open" or not prev.info.strip().startswith("{") \
            or not prev.map or prev.map[0] + 1 != start:
        return False
    lines, j = [], start
    while j < end and len(lines) < 200 and not state.isEmpty(j):
        lines.append(state.src[state.bMarks[j] + state.tShift[j]:state.eMarks[j]])
        j += 1
    n = option_lines(lines)
    if n and not silent:
        tok = state.push("myst_options", "", 0)
        tok.map = [start, start + n]
        state.line = start + n
    return bool(n)


def myst_directives(state) -> None:
    """Core rule (MyST): directives' bodies parsed as MyST parses them (see the module's doc)."""
    state.tokens = _directive_tokens(state, state.tokens)


def role_text(name: str, content: str) -> str:
    """What a MyST role shows: `text <target>` -> text, `~a.b.C` -> C, `{abbr}` `CSS (Cascading
    Style Sheets)` -> CSS (the explanation is a tooltip), else its content."""
    if name == "abbr" and "(" in content:
        return content.split("(", 1)[0].strip()
    m = _ROLE_TITLE.match(content.strip())
    if m:
        return m.group(1)
    text = content.strip().lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def _container_ok(params: str, markup: str) -> bool:
    if params.strip().startswith("{") and not params.strip().startswith("{%"):
        return True  # MyST `:::{note}`
    return bool(_CONTAINER_NAME.match(params)) and "." not in params.split()[0] if params.strip() else False


def _block_end(state, start: int, end: int, length: int) -> tuple[int, bool]:
    """(the line closing a `///` block opened at `start`, found?): the first `/` fence of exactly
    `length` at the block's indentation, outside code fences."""
    fence, nxt = "", start
    while True:
        nxt += 1
        if nxt >= end or (not state.isEmpty(nxt) and state.sCount[nxt] < state.blkIndent):
            return nxt, False
        text = block_line(state, nxt)
        f = _CODE_FENCE.match(text)
        if f and (not fence or (f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not f.group(2).strip())):
            fence = "" if fence else f.group(1)
        elif not fence and state.sCount[nxt] - state.blkIndent < 4:
            m = _BLOCK_END.match(text)
            if m and len(m.group(1)) == length:
                return nxt, True


def _blocks_rule(state, start: int, end: int, silent: bool) -> bool:
    """pymdownx.blocks: `/// name | title`, its body parsed as Markdown, up to its own `///`."""
    line, m = marker(state, start, _BLOCK_START)
    if not m or silent:
        return bool(m)
    markup = m.group(1)
    close, found = _block_end(state, start, end, len(markup))
    old_parent, old_max = state.parentType, state.lineMax
    state.parentType, state.lineMax = "container", close
    tok = state.push("container_blocks_open", "div", 1)
    tok.markup, tok.block, tok.info, tok.map = markup, True, line[len(markup):], [start, close]
    state.md.block.tokenize(state, start + 1, close)
    tok = state.push("container_blocks_close", "div", -1)
    tok.markup, tok.block = markup if found else "", True
    state.parentType, state.lineMax = old_parent, old_max
    state.line = close + (1 if found else 0)
    return True


# mkdocs-material's code annotation marker: a comment holding only `(1)` (`(1)!` strips the
# comment), at a line's end; the published page shows a button in its place
_ANNOTATION = re.compile(r"[ \t]*(?:#|//|--|;|/\*|<!--)[ \t]*\(\d+\)!?[ \t]*(?:\*/|-->)?[ \t]*$")


def annotated(info: str, site_wide: bool) -> bool:
    """Whether a fence's code annotations are markers: the site enables them for every block
    (mkdocs-material's `content.code.annotate`) or the fence's attributes name `.annotate`."""
    return site_wide or (is_fence_attrs((info or "").strip()) and ".annotate" in info)


def strip_annotation(line: str) -> str:
    """A code line without its annotation marker (`x = 1  # (1)!` -> `x = 1`)."""
    return _ANNOTATION.sub("", line)


def fence_language(info: str) -> str:
    """A code fence's language as pymdownx.superfences reads its info: `python hl_lines="2"` ->
    python, an attribute list `{ .python .annotate }` -> its first class, `hl_lines="2"` -> none."""
    info = (info or "").strip()
    if is_fence_attrs(info):
        m = re.search(r"\.([\w+#-]+)", info)
        return m.group(1).lower() if m else ""
    first = info.split(" ")[0].split("{")[0]
    return "" if "=" in first else first.lower()


def is_fence_attrs(info: str) -> bool:
    """`{ .python .annotate hl_lines="3" }`: superfences' attribute list, not a MyST `{directive}`."""
    return bool(_FENCE_ATTRS.match((info or "").strip()))


def _line_rule(name: str, pattern: re.Pattern, body: str = "", mdx_only: bool = False):
    """A block rule for a marker line: token `name`, the match's groups in `meta`. `body`:
    "indented" takes the lines indented below it too (mkdocstrings' options), "paragraph" the
    lines up to the next blank one (an MDX statement); `mdx_only`: at the top level of MDX."""

    def rule(state, start: int, end: int, silent: bool) -> bool:
        if mdx_only and (state.blkIndent or not state.env.get("mdx")):
            return False
        line, m = marker(state, start, pattern)
        if not m or silent:
            return bool(m)
        nxt = start + 1
        while nxt < end and (body == "indented" and (state.isEmpty(nxt) or state.sCount[nxt] > state.blkIndent)
                             or body == "paragraph" and not state.isEmpty(nxt)):
            nxt += 1
        tok = state.push(name, "", 0)
        tok.map, tok.meta = [start, nxt], {"groups": m.groups()}
        tok.content = "\n".join(state.getLines(start, nxt, 0, False).splitlines()) if body == "paragraph" else line
        state.line = nxt
        return True

    return rule


def _tabbed_rule(state, start: int, end: int, silent: bool) -> bool:
    """pymdownx.tabbed: `=== "Label"` then content indented by four spaces."""
    _, m = marker(state, start, _TABBED)
    if not m or silent:
        return bool(m)
    old_parent, old_max, old_indent = state.parentType, state.lineMax, state.blkIndent
    state.blkIndent += 4
    nxt, was_empty = start, False
    while True:
        nxt += 1
        if nxt >= end:
            break
        empty = state.isEmpty(nxt)
        if empty and was_empty:
            break
        was_empty = empty
        if not empty and state.sCount[nxt] < state.blkIndent:
            break
    state.parentType, state.lineMax = "tabbed", nxt
    tok = state.push("tabbed_open", "div", 1)
    tok.map, tok.meta = [start, nxt], {"label": m.group(1)}
    state.md.block.tokenize(state, start + 1, nxt)
    state.push("tabbed_close", "div", -1)
    state.parentType, state.lineMax, state.blkIndent = old_parent, old_max, old_indent
    state.line = nxt
    return True


@lru_cache(maxsize=8)
def parser(myst: bool = False, heading_ids: bool = True, extensions: tuple[str, ...] = ()) -> MarkdownIt:
    """The parser for a page; `myst` adds MyST's targets, comments, block breaks, roles and
    directives (Sphinx), `extensions` the Markdown extensions a site enables (MyST's `attrs_block`,
    `attrs_inline`, `fieldlist`; goldmark's `block_attrs`: a line of attributes only is markup);
    `heading_ids` reads `{#id}` after a heading (Starlight does not: it stays in the title);
    `attrs_inline` is also mkdocs' `attr_list` (a link's or an image's `{.class key=value}`)."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(front_matter_plugin).use(admon_plugin).use(deflist_plugin)
    alt = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("fence", "autodoc", _line_rule("autodoc", _AUTODOC, body="indented"), alt)
    md.use(container_plugin, name="adm", marker=":", validate=_container_ok)
    md.block.ruler.before("fence", "container_blocks", _blocks_rule, alt)
    md.block.ruler.before("fence", "tabbed", _tabbed_rule, alt)
    md.block.ruler.before("fence", "code_shortcode", code_shortcode, alt)
    md.block.ruler.before("fence", "template_tag", _line_rule("template_tag", TEMPLATE_TAG), alt)
    md.block.ruler.before("fence", "shortcode_lines", shortcode_lines, alt)
    md.block.ruler.before("front_matter", "toml_front_matter", toml_front_matter)
    md.inline.ruler.before("link", "shortcode", shortcode_inline)
    md.block.ruler.before("fence", "mdx_esm", _line_rule("mdx_esm", _ESM, body="paragraph", mdx_only=True), alt)
    if heading_ids:
        md.core.ruler.after("block", "heading_attrs", heading_attrs)
    if "block_attrs" in extensions:  # goldmark's block attributes (Hugo's `parser.attribute.block`)
        md.block.ruler.before("fence", "block_attrs", _line_rule("block_attrs", _ATTR_LINE), alt)
    if myst:
        md.use(myst_block_plugin).use(myst_role_plugin)
        md.block.ruler.before("table", "myst_options", _options_rule)
        md.core.ruler.after("block", "myst_directives", myst_directives)
    if "attrs_inline" in extensions:  # MyST's attrs_inline, mkdocs' attr_list: `[a](b.md){.internal-link}`
        md.use(attrs_plugin, after=("image", "code_inline", "link_close", "span_close"), spans=myst)
    if myst and "attrs_block" in extensions:
        md.use(attrs_block_plugin)
    if myst and "fieldlist" in extensions:
        md.use(fieldlist_plugin)
    return md


def container_label(info: str) -> tuple[str, str]:
    """(name, title) of a container's info: "tip My tip", "{note} Title", "tip[Custom]",
    ' tab | Python 3.10+', 'tab{title="A"}'."""
    info = info.strip()
    m = re.match(r"^\{?([A-Za-z][\w-]*)\}?(.*)$", info)
    if not m:
        return "", info
    name, rest = m.group(1).lower(), m.group(2).strip()
    if rest.startswith("|"):
        rest = rest[1:].strip()
    b = re.match(r"^\[([^\]]*)\]", rest) or re.search(r"""title=["']([^"']*)["']""", rest)
    if b:
        rest = b.group(1)
    elif rest.startswith("{"):
        rest = ""
    return name, rest.strip().strip('"')


_RAW = {
    "heading attribute": re.compile(r"\{\s*#[\w-]+[^{}]*\}"),
    "admonition marker": re.compile(r"(?m)^\s*(?:!!!|\?\?\?\+?|:::+|///+|===\s+\")"),
    "template tag": re.compile(r"\{%.*?%\}|\{\{[<%].*?[>%]\}\}"),
    "include directive": re.compile(r"\{\{#\w+|--8<--|\{\*\s|\{!\s|@include:"),
    "MDX statement": re.compile(r"(?m)^(?:import|export)\s[^\n]*?\sfrom\s+['\"]"),
}


def raw_markers(text: str) -> dict[str, int]:
    """Dialect markers left in a text that should have none (a breadcrumb, an embedded text)."""
    out = {}
    for name, rx in _RAW.items():
        n = len(rx.findall(text or ""))
        if n:
            out[name] = n
    return out


def inline_text(tok) -> str:
    """Readable text of an inline token: text, code spans, link texts and what MyST roles
    show, no images."""
    out = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "shortcode":
            out.append(child.content)
        elif child.type == "myst_role":
            out.append(role_text(child.meta.get("name", ""), child.content))
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
    return "".join(out).strip()
