"""Markdown page -> structural nodes, with markdown-it-py's token stream and line maps.

The page is read in its site's dialect (`dialects.parser`): front matter, heading ids,
admonitions, tabs and MDX statements are tokens, not text; an admonition's or a tab's title
stays in its section's prose, its marker does not. Each heading gets the anchor its generator
gives it (`slugs.Slugger`). Included files arrive already read in (`includes.Includes`),
with `line_map` taking each line back to the page's own.

A page becomes a file node; each heading section a chunk (nested headings are sub-chunks of
their parent); fenced code, Markdown/HTML tables and images become their own nodes with
`context_lines` of surrounding text (handed over with the node, `node["context"]`; an image keeps
it in its meta). Links to other `.md` pages are kept for jump edges.
"""
from __future__ import annotations

import html
import posixpath
import re
from urllib.parse import unquote, urlsplit

from .context import around as _around
from .dialects import (ADMONITIONS, CODE_DIRECTIVES, IMAGE_DIRECTIVES, annotated, container_label, directive_of,
                       fence_language, inline_text, is_fence_attrs, parser, strip_annotation)
from .includes import EXT_LANG
from .shortcodes import openapi_label, template_label, unescape
from .page import ImageRef, ParsedPage, content_hash, detect_language, load_front, node_id
from .slugs import Slugger

_IMG_SRC = re.compile(r"""<img\b[^>]*?\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I | re.S)
_IMG_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_HREF = re.compile(r"""<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")
_JSX_TAG = re.compile(r"<[A-Z][\w.]*[\s/>]")
_LABEL_ATTR = re.compile(r"""<[A-Z][\w.]*\b[^>]*?\b(?:label|title|caption)\s*=\s*["']([^"']+)["']""")
_ALERT = re.compile(r"^\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*")  # GitHub's alerts, in a blockquote
_CODE_REF = re.compile(r"<CodeBlock\b[^>]*>\s*\{\s*(\w+)\s*\}\s*</CodeBlock>")
_RAW_LOADER = re.compile(r"""import\s+(\w+)\s+from\s+['"]!!?raw-loader!([^'"]+)['"]""")
_MYST_MARKUP = ("myst_target", "myst_line_comment", "myst_block_break", "myst_options")  # structure only: no text
_DIALECT = {"admonition_open", "container_adm_open", "container_blocks_open", "tabbed_open", "autodoc",
            "template_tag", "mdx_esm", "myst_directive_open", "block_attrs", *_MYST_MARKUP}


class _PageParser:
    def __init__(self, path: str, text: str, context_lines: int, exists, slug_rule: str = "github",
                 read_code=None, fallback_title: str = "", mdx: bool = False, route_of=None,
                 head_first: bool = False, site_root: str = "", site_url: str = "", annotations: bool = False):
        self.path = path
        self.annotations = annotations  # every fence's `# (1)!` is a code annotation marker (mkdocs-material)
        self.site_root = site_root  # where "/img/x.png" starts: the site's docs folder (else the docs root)
        self.site_url = site_url  # the site's own URL: an image written as https://site/img/x.png is /img/x.png
        self.head_first = head_first
        self.route_of = route_of  # callable(href) -> the page a site route names, or None
        self.mdx = mdx
        self.lines = text.splitlines()
        self.ctx = context_lines
        self.exists = exists  # callable(rel_path) -> bool, confined to the docs root
        self.read_code = read_code  # callable(target) -> str | None: a directive's code file, confined
        self.dir = posixpath.dirname(path)
        self.page = ParsedPage(path=path, title="", language=detect_language(text))
        self.file_id = node_id("file", path)
        self.stack: list[tuple[int, dict]] = []  # (level, chunk node)
        self.chunk: dict | None = None
        self.seen: dict[str, int] = {}
        self.slugger = Slugger(slug_rule)
        self.fallback_title = fallback_title  # the page's title when it has no H1 (front matter, nav)
        self.root_crumb = ""
        self.promote_first = False  # a page without an H1 or a title: its first heading heads the rest
        self.code_imports: dict[str, str] = {}  # MDX: name -> the file a raw-loader import reads
        self.target = ""  # a MyST `(label)=` target: the id of the heading right after it
        self.hidden: set[int] = set()  # lines of markup only (markers, statements): not in a section's text
        self.shown: dict[int, str] = {}  # lines shown otherwise: a heading without its {#id}, a marker's title

    # -- ids and nodes -------------------------------------------------------------
    def _add(self, kind: str, text: str, parent: str, line_start: int, line_end: int, **extra) -> dict:
        crumb = extra.pop("breadcrumb", None) or (self.chunk["breadcrumb"] if self.chunk else self.page.title)
        base = node_id(kind, self.path, crumb, text)
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        nid = base if n == 0 else f"{base}-{n}"
        node = {
            "id": nid, "type": kind, "text": text, "breadcrumb": crumb, "source_path": self.path,
            "line_start": line_start, "line_end": line_end, "language": self.page.language,
            "content_hash": content_hash(text), "meta": extra,
        }
        if "context" in extra:  # handed over with the node, not stored: derivable (ingest/context.py)
            node["context"] = extra.pop("context")
        self.page.nodes.append(node)
        self.page.contains.append((parent, nid))
        return node

    def _context(self, start: int, end: int) -> str:
        """The lines around, as the section shows them: markers (`///`, a tab's line) gone."""
        lo, hi = max(0, start - self.ctx), min(len(self.lines), end + self.ctx)
        view = ["" if i in self.hidden else self._shown(i) for i in range(lo, hi)]
        return _around(view, start - lo, end - lo, self.ctx)

    def _ensure_chunk(self, line: int) -> dict:
        if self.chunk is None:  # prose before the first heading
            title = self.page.title or posixpath.basename(self.path)
            self.chunk = self._add("chunk", "", self.file_id, line + 1, line + 1,
                                   breadcrumb=title, level=0, title=title, filter=[])
            self.stack.append((0, self.chunk))
        return self.chunk

    # -- tokens ------------------------------------------------------------------------
    def run(self, tokens) -> ParsedPage:
        self._prepare(tokens)
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "heading_open" and tok.level == 0:
                self._heading(tok, tokens[i + 1])
                i += 3
                continue
            if tok.type == "fence" and (tok.info or "").strip().startswith("{") and not is_fence_attrs(tok.info):
                self._directive(tok)
            elif tok.type in ("fence", "code_block"):
                self._code(tok)
            elif tok.type == "table_open":
                j = i
                while tokens[j].type != "table_close":
                    j += 1
                self._table_md(tok, tokens[i:j + 1])
                i = j + 1
                continue
            elif tok.type == "html_block":
                self._html_block(tok)
            elif tok.type == "inline":
                self._inline(tok)
            elif tok.nesting >= 0 and tok.type in _DIALECT:
                self._dialect(tok)
            i += 1
        self._finish()
        return self.page

    def _prepare(self, tokens) -> None:
        """Front matter, and the breadcrumb's root for a page without an H1."""
        for tok in tokens:
            if tok.type == "front_matter":
                try:
                    self.page.front = load_front(tok.markup, tok.content)
                except ValueError as exc:
                    self.page.problems.append(str(exc))
                    self.page.front = {}
                self._count("front matter")
                self.hidden.update(range(*tok.map) if tok.map else ())
                break
        has_h1 = any(t.type == "heading_open" and t.tag == "h1" and t.level == 0 for t in tokens)
        if not has_h1:  # the front matter's title heads the breadcrumbs, else the first heading does
            title = self.page.front.get("title")
            self.root_crumb = str(title).strip() if title else ""
            self.page.title = self.root_crumb or self.fallback_title
            self.promote_first = self.head_first and not self.root_crumb

    def _count(self, kind: str) -> None:
        self.page.recognised[kind] = self.page.recognised.get(kind, 0) + 1

    def _note(self, label: str, line: int) -> None:
        """An admonition's or a tab's title, kept as a line of its section's prose."""
        if label:
            self._ensure_chunk(line)["meta"]["filter"].append(label)

    def _markup(self, tok, label: str = "", whole: bool = False) -> None:
        """The lines of a construct's markers leave its section's text; a title stays as text."""
        if not tok.map:
            return
        start, end = tok.map
        if whole:
            self.hidden.update(range(start + 1, end))
        if label:
            self.shown[start] = label
        else:
            self.hidden.add(start)
        closing = end if not whole else None
        if closing is not None and closing < len(self.lines) and tok.markup and \
                self.lines[closing].strip().startswith(tok.markup[:3]):
            self.hidden.add(closing)

    def _dialect(self, tok) -> None:
        line = tok.map[0] if tok.map else 0
        label = ""
        if tok.type == "admonition_open":  # its title is the inline token that follows
            kind, label = "admonition", tok.content
        elif tok.type in ("container_adm_open", "container_blocks_open", "myst_directive_open"):
            name, title = container_label(tok.info)
            kind = "admonition" if name in ADMONITIONS else "tab" if name in ("tab", "tab-item") else \
                "directive" if tok.type == "myst_directive_open" else "container"
            label = "" if name in IMAGE_DIRECTIVES else title or (name.capitalize() if kind == "admonition" else "")
            self._note(label, line)
            self.hidden.update(range(line + 1, line + 1 + (tok.meta or {}).get("options", 0)))  # a fence's :options:
        elif tok.type == "tabbed_open":
            kind, label = "tab", tok.meta.get("label", "")
            self._note(label, line)
        elif tok.type == "autodoc":
            kind, label = "generated reference", f"API reference: {tok.meta['groups'][0]}"
            self._note(label, line)
        elif tok.type == "template_tag":
            name, title, closing = template_label(tok.meta["groups"])
            kind, label = "template tag", "" if closing else title
            if name in ("openapi", "openapi-operation") and not closing:  # GitBook: drawn from an OpenAPI spec
                kind, label = "generated reference", openapi_label(tok.meta["groups"])
            self._note(label, line)
        elif tok.type == "block_attrs":
            kind = "attribute list"
        elif tok.type == "mdx_esm":
            kind = "MDX statement"
            for name, target in _RAW_LOADER.findall(tok.content):
                self.code_imports[name] = target
        else:  # MyST targets, comments and block breaks: structure, not text
            kind = "MyST markup"
            if tok.type == "myst_target":
                self.target = tok.content.strip()
        self._count(kind)
        self._markup(tok, label, whole=tok.type in ("autodoc", "mdx_esm", "template_tag") + _MYST_MARKUP)

    def _directive(self, tok) -> None:
        """A MyST directive written as a fence: ```{name} argument."""
        name, arg = directive_of(tok.info) or ("", "")
        body = [ln for ln in tok.content.splitlines() if not re.match(r"^:[\w-]+:", ln)]
        opts = dict(re.findall(r"^:([\w-]+):\s*(.*)$", tok.content, re.M))
        line = tok.map[0] if tok.map else 0
        if name in ("code-block", "code", "sourcecode", "code-cell", "mermaid", "math") or name in CODE_DIRECTIVES:
            self._count("directive")
            self._code(tok, "\n".join(body).strip("\n"), CODE_DIRECTIVES.get(name) or arg.split(" ")[0] or name)
        elif name == "literalinclude":
            self._count("include")
            code = self.read_code(arg) if self.read_code and arg else None
            if code is not None:
                lang = opts.get("language") or EXT_LANG.get(posixpath.splitext(arg)[1].lstrip("."), "")
                self._code(tok, code, lang)
        elif name in ADMONITIONS:
            self._count("admonition")
            self._note(arg or name.capitalize(), line)
            self.shown[line] = arg or name.capitalize()
            if tok.map and tok.map[1] - 1 > line:
                self.hidden.add(tok.map[1] - 1)
            self._ensure_chunk(line)["meta"]["filter"].extend(b.strip() for b in body if b.strip())
        elif name.startswith("auto") or name in ("toctree", "contents", "include"):
            self._count("generated reference" if name.startswith("auto") else "directive")
            if name.startswith("auto") and arg:
                self._note(f"API reference: {arg}", line)
        else:
            self._count("directive")
            self._ensure_chunk(line)["meta"]["filter"].extend(b.strip() for b in body if b.strip())

    def _heading(self, tok, inline_tok) -> None:
        level = int(tok.tag[1])
        shown = inline_text(inline_tok)  # an empty `#` (a home page hiding its H1): the nav's title heads it
        title = shown or (self.fallback_title if level == 1 else "") or f"H{level}"
        if not self.page.title and level == 1:
            self.page.title = title
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        parent = self.stack[-1][1]["id"] if self.stack else self.file_id
        crumbs = [c["meta"]["title"] for _, c in self.stack if c["meta"].get("level", 0) > 0] + [title]
        if self.promote_first:
            self.root_crumb, self.promote_first = title, False
            self.page.title = self.page.title or title
        elif self.root_crumb and crumbs[0] != self.root_crumb:
            crumbs.insert(0, self.root_crumb)
        line = tok.map[0] if tok.map else 0
        element = [c.content for c in inline_tok.children or [] if c.type == "html_inline"]
        anchor = self.slugger.anchor(shown, tok.attrGet("id") or self.target or self.slugger.element_id(element))
        self.target = ""
        if tok.attrGet("id") and tok.markup.startswith("#"):
            self.shown[line] = f"{tok.markup} {title}"
        self.chunk = None
        self.chunk = self._add("chunk", "", parent, line + 1, line + 1, breadcrumb=" / ".join(crumbs),
                               level=level, title=title, filter=[title], anchor=anchor)
        self.stack.append((level, self.chunk))
        self._links_of(inline_tok)

    def _code(self, tok, content: str | None = None, lang: str | None = None) -> None:
        start, end = tok.map or (0, 0)
        chunk = self._ensure_chunk(start)
        if lang is None:
            lang = fence_language(tok.info) if tok.type == "fence" else ""
        content = unescape(tok.content.rstrip("\n") if content is None else content)
        if tok.type == "fence" and annotated(tok.info, self.annotations):
            content = self._strip_annotations(content, start + 1)
        if tok.markup == "{{<":  # a Hugo code shortcode: its tags read as the fence they stand for
            self._count("template tag")
            self.shown[start], self.shown[end - 1] = f"```{lang}", "```"
        if content.strip():
            self._add("code", content, chunk["id"], start + 1, end, code_language=lang.lower(),
                      context=self._context(start, end))

    def _strip_annotations(self, content: str, first: int) -> str:
        """The code without mkdocs-material's annotation markers, in the section's text too
        (the body's lines start at page line `first`)."""
        lines = content.split("\n")
        for i, line in enumerate(lines):
            clean = strip_annotation(line)
            if clean != line:
                lines[i] = clean
                if first + i < len(self.lines):  # the source line keeps its indentation
                    self.shown[first + i] = strip_annotation(self.shown.get(first + i, self.lines[first + i]))
                self._count("code annotation")
        return "\n".join(lines)

    def _table_md(self, tok, table_tokens) -> None:
        start, end = tok.map or (0, 0)
        chunk = self._ensure_chunk(start)
        rows, row = [], []
        for t in table_tokens:
            if t.type == "tr_open":
                row = []
            elif t.type == "inline":
                row.append(inline_text(t))
                self._links_of(t)
                self._images_of(t, chunk, start)
            elif t.type == "tr_close":
                rows.append(row)
        text = "\n".join(self.lines[start:end])
        self._add("table", text, chunk["id"], start + 1, end, table_format="markdown",
                  header=rows[0] if rows else [], rows=len(rows), context=self._context(start, end))

    def _html_block(self, tok) -> None:
        start, end = tok.map or (0, 0)
        content = tok.content
        if _JSX_TAG.search(content):
            self._component(tok)
        if "<table" in content.lower():
            chunk = self._ensure_chunk(start)
            first = re.search(r"<tr\b[^>]*>(.*?)</tr>", content, re.I | re.S)  # the header: the first row's cells
            cells = [html.unescape(_TAG.sub(" ", c)).strip()
                     for c in re.findall(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", first.group(1) if first else content, re.I | re.S)]
            self._add("table", content.strip(), chunk["id"], start + 1, end, table_format="html",
                      header=cells[:8], rows=content.lower().count("<tr"), context=self._context(start, end))
        for m in _HREF.finditer(content):
            self._link(m.group(1) or m.group(2) or "", self._ensure_chunk(start))
        for m in _IMG_SRC.finditer(content):
            src = m.group(1) or m.group(2) or m.group(3) or ""
            alt = _IMG_ALT.search(m.group(0))
            self._image(src, (alt.group(1) or alt.group(2)) if alt else "", self._ensure_chunk(start), start)

    def _component(self, tok) -> None:
        """MDX / Vue components: a tab's label and a raw-loader code block stay; the tags go."""
        start = tok.map[0] if tok.map else 0
        self._count("component")
        for label in _LABEL_ATTR.findall(tok.content):
            self._note(label, start)
        for name in _CODE_REF.findall(tok.content):
            target = self.code_imports.get(name)
            code = self.read_code(target) if target and self.read_code else None
            if code is not None:
                lang = EXT_LANG.get(posixpath.splitext(target)[1].lstrip("."), "")
                self._count("include")
                self._code(tok, code, lang)
        if self.mdx:  # text written between a component's tags
            text = html.unescape(_TAG.sub(" ", re.sub(r"\{[^{}]*\}", " ", tok.content))).split()
            if text:
                self._ensure_chunk(start)["meta"]["filter"].append(" ".join(text))

    def _inline(self, tok) -> None:
        self.target = ""  # a target before a paragraph names the paragraph, not the next heading
        if self.mdx and _CODE_REF.fullmatch(tok.content.strip()):
            # `<CodeBlock>{X}</CodeBlock>` on one line is no HTML block for CommonMark: a paragraph
            return self._component(tok)
        start = tok.map[0] if tok.map else 0
        chunk = self._ensure_chunk(start)
        text = unescape(inline_text(tok))
        if text.startswith("[!") and _ALERT.match(text):
            self._count("admonition")
            text = _ALERT.sub(lambda m: m.group(1).capitalize() + ": ", text)
        if text:
            chunk["meta"]["filter"].append(text)
        self._links_of(tok)
        self._images_of(tok, chunk, start)

    def _links_of(self, tok) -> None:
        for child in tok.children or []:
            if child.type == "link_open" and (child.meta or {}).get("ref"):
                self._ref(child.attrGet("href") or "", self.chunk)
            elif child.type == "link_open":
                self._link(child.attrGet("href") or "", self.chunk)
            elif child.type == "html_inline":
                for m in _HREF.finditer(child.content):
                    self._link(m.group(1) or m.group(2) or "", self.chunk)

    def _images_of(self, tok, chunk, line) -> None:
        for child in tok.children or []:
            if child.type == "image":
                alt = "".join(c.content for c in child.children or []) or child.content
                self._image(child.attrGet("src") or "", alt, chunk, line)
            elif child.type == "html_inline":
                for m in _IMG_SRC.finditer(child.content):
                    alt = _IMG_ALT.search(m.group(0))
                    self._image(m.group(1) or m.group(2) or m.group(3) or "",
                                (alt.group(1) or alt.group(2)) if alt else "", chunk, line)

    # -- links and images --------------------------------------------------------------
    def _resolve(self, target: str) -> str | None:
        """A reference relative to this page -> a path relative to the docs root, or None."""
        target = unquote(target.strip().replace("\\", "/"))
        if not target or target.startswith("//"):
            return None
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            return None  # http:, file:, mailto:, data: ... never read
        rel = posixpath.join(self.site_root, parts.path.lstrip("/")) if parts.path.startswith("/") \
            else posixpath.join(self.dir, parts.path)
        rel = posixpath.normpath(rel)
        if rel.startswith("../") or rel == ".." or rel.startswith("/"):
            return None  # outside the docs root
        return rel

    def _link(self, href: str, chunk: dict | None) -> None:
        if chunk is None or not href or href.startswith("#"):
            return
        parts = urlsplit(href.strip())
        if parts.scheme or parts.netloc:
            return
        if not parts.path.lower().endswith((".md", ".mdx")):  # a route of the site: `/guide/deploy#netlify`
            rel = self.route_of(parts.path) if self.route_of and parts.path else None
            if rel:
                self.page.links.append((chunk["id"], rel, parts.fragment))
            return
        rel = self._resolve(href.split("#")[0])
        if rel is None:
            self.page.problems.append(f"link outside the docs root: {href}")
            return
        if not self.exists(rel):
            self.page.problems.append(f"broken link: {href} -> {rel}")
        self.page.links.append((chunk["id"], rel, parts.fragment))

    def _ref(self, href: str, chunk: dict | None) -> None:
        """Hugo's ref / relref: a page from this page's folder, else from the content folder
        (`site_root`), else a route of the site (`ref "install"`)."""
        path, _, frag = href.partition("#")
        for cand in ([path] if not path.startswith("/") else []) + ["/" + path.lstrip("/")]:
            rel = self._resolve(cand)
            if chunk is not None and rel and self.exists(rel):
                self.page.links.append((chunk["id"], rel, frag))
                return
        self._link(href, chunk)

    def _image(self, src: str, alt: str, chunk: dict, line: int) -> None:
        if "{{" in src or "{%" in src:  # a template's placeholder (mkdocs macros' `{{ sponsor.img }}`): no file yet
            return
        own = self.site_url and src.startswith(self.site_url)  # a README-friendly link to the site's own file
        rel = self._resolve("/" + src[len(self.site_url):].lstrip("/") if own else src)
        key = f"img{len(self.page.images)}"
        if rel is None and (urlsplit(src).scheme.lower() in ("http", "https") or src.startswith("//")):
            self._count("remote image")  # on another host: the page links it, the index does not hold it
        elif rel is None:  # `../x.png` above the root, `file:///etc/x.png`, a `data:` URL
            self.page.problems.append(f"image not read (not a file under the docs root): {src}")
        self.page.images.append(ImageRef(key, chunk["id"], src, rel, alt.strip(), line + 1,
                                         self._context(line, line + 1)))

    def _finish(self) -> None:
        if not self.page.title:
            self.page.title = posixpath.splitext(posixpath.basename(self.path))[0]
        chunks = [n for n in self.page.nodes if n["type"] == "chunk"]
        starts = sorted(c["line_start"] for c in chunks) + [len(self.lines) + 1]
        for c in chunks:
            nxt = next(s for s in starts if s > c["line_start"]) if c["line_start"] < starts[-1] else starts[-1]
            c["line_end"] = max(c["line_start"], nxt - 1)
            c["text"] = "\n".join(self._shown(i) for i in range(c["line_start"] - 1, c["line_end"])
                                  if i not in self.hidden).strip()
            c["prose"] = "\n".join(c["meta"].pop("filter", []))
            c["content_hash"] = content_hash(c["text"])
        self.page.nodes = [n for n in self.page.nodes if n["type"] != "chunk" or n["text"] or n["prose"]]

    def _shown(self, i: int) -> str:
        return unescape(self.shown.get(i, self.lines[i])) if i < len(self.lines) else ""

    def map_lines(self, line_map: list[int]) -> None:
        """Lines of the text with its includes read in -> lines of the page itself."""
        def back(n):
            return line_map[min(n, len(line_map)) - 1] + 1 if n and line_map else n
        for n in self.page.nodes:
            n["line_start"], n["line_end"] = back(n["line_start"]), back(n["line_end"])
        for ref in self.page.images:
            ref.line = back(ref.line)


def parse_page(path: str, text: str, *, context_lines: int = 15, exists=lambda p: True, slug_rule: str = "github",
               myst: bool = False, line_map: list[int] | None = None, read_code=None,
               fallback_title: str = "", mdx: bool | None = None, heading_ids: bool = True,
               route_of=None, head_first: bool = False, extensions: tuple[str, ...] = (),
               site_root: str = "", site_url: str = "") -> ParsedPage:
    """Parse one page (its path relative to the docs root, POSIX separators). `text` may have
    its includes read in already: `line_map[i]` is then the page's own line of its line i.
    `mdx`: the page is MDX (default: a .mdx file; Docusaurus reads .md pages as MDX too).
    `head_first`: a page with no H1 and no title is headed by its first heading (a site's page:
    mdBook's chapters start at "## Title"); off, such a page's sections stand alone, as GitHub shows them.
    `extensions`: the MyST extensions the site enables (`dialects.parser`), and `code_annotations`
    where every fence's `# (1)!` is an annotation marker (mkdocs-material); `site_root`: the folder
    a site-absolute path (`/img/x.png`) starts from, relative to the docs root; `site_url`: the
    site's URL, an image under it (`https://site/img/x.png`) is that site-absolute path."""
    mdx = path.endswith(".mdx") if mdx is None else mdx
    tokens = parser(myst, heading_ids, tuple(sorted(extensions))).parse(text, {"mdx": mdx})
    pp = _PageParser(path, text, context_lines, exists, slug_rule, read_code, fallback_title, mdx, route_of,
                     head_first, site_root, site_url, "code_annotations" in extensions)
    page = pp.run(tokens)
    if line_map is not None:
        pp.map_lines(line_map)
    return page
