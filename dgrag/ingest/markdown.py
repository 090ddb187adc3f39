"""Markdown page -> structural nodes, with markdown-it-py's token stream and line maps.

A page becomes a file node; each heading section a chunk (nested headings are sub-chunks of
their parent); fenced code, Markdown/HTML tables and images become their own nodes with
`context_lines` of surrounding text
(handed over with the node, `node["context"]`; an image keeps it in its meta). Links to other `.md` pages are kept for jump edges.
"""
from __future__ import annotations

import hashlib
import html
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt

from .context import around as _around

_IMG_SRC = re.compile(r"""<img\b[^>]*?\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I | re.S)
_IMG_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_HREF = re.compile(r"""<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


@dataclass
class ImageRef:
    node_key: str          # placeholder id, replaced by the image node once the bytes are known
    chunk_id: str
    src: str               # as written in the page
    path: str | None       # resolved path relative to the docs root, None if remote / invalid
    alt: str
    line: int
    context: str


@dataclass
class ParsedPage:
    path: str
    title: str
    language: str
    nodes: list[dict] = field(default_factory=list)
    contains: list[tuple[str, str]] = field(default_factory=list)   # parent id -> child id
    links: list[tuple[str, str, str]] = field(default_factory=list)  # chunk id, target path, anchor
    images: list[ImageRef] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table")


_PARSER = _md()


def node_id(kind: str, *parts: str) -> str:
    h = hashlib.md5("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}-{h}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def detect_language(text: str) -> str:
    cjk = len(_CJK.findall(text[:20000]))
    latin = len(_LATIN.findall(text[:20000]))
    return "zh" if cjk and cjk * 3 >= latin * 0.2 + cjk else "en"


def inline_text(tok) -> str:
    """Readable text of an inline token: text, code spans and link texts, no images."""
    out = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type == "html_inline":
            continue
    return "".join(out).strip()


class _PageParser:
    def __init__(self, path: str, text: str, context_lines: int, exists):
        self.path = path
        self.lines = text.splitlines()
        self.ctx = context_lines
        self.exists = exists  # callable(rel_path) -> bool, confined to the docs root
        self.dir = posixpath.dirname(path)
        self.page = ParsedPage(path=path, title="", language=detect_language(text))
        self.file_id = node_id("file", path)
        self.stack: list[tuple[int, dict]] = []  # (level, chunk node)
        self.chunk: dict | None = None
        self.seen: dict[str, int] = {}

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
        return _around(self.lines, start, end, self.ctx)

    def _ensure_chunk(self, line: int) -> dict:
        if self.chunk is None:  # prose before the first heading
            title = self.page.title or posixpath.basename(self.path)
            self.chunk = self._add("chunk", "", self.file_id, line + 1, line + 1,
                                   breadcrumb=title, level=0, title=title, filter=[])
            self.stack.append((0, self.chunk))
        return self.chunk

    # -- tokens ------------------------------------------------------------------------
    def run(self, tokens) -> ParsedPage:
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "heading_open" and tok.level == 0:
                self._heading(tok, tokens[i + 1])
                i += 3
                continue
            if tok.type in ("fence", "code_block"):
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
            i += 1
        self._finish()
        return self.page

    def _heading(self, tok, inline_tok) -> None:
        level = int(tok.tag[1])
        title = inline_text(inline_tok) or f"H{level}"
        if not self.page.title and level == 1:
            self.page.title = title
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        parent = self.stack[-1][1]["id"] if self.stack else self.file_id
        crumbs = [c["meta"]["title"] for _, c in self.stack if c["meta"].get("level", 0) > 0] + [title]
        line = tok.map[0] if tok.map else 0
        self.chunk = None
        self.chunk = self._add("chunk", "", parent, line + 1, line + 1, breadcrumb=" / ".join(crumbs),
                               level=level, title=title, filter=[title])
        self.stack.append((level, self.chunk))
        self._links_of(inline_tok)

    def _code(self, tok) -> None:
        start, end = tok.map or (0, 0)
        chunk = self._ensure_chunk(start)
        lang = (tok.info or "").strip().split(" ")[0].lower() if tok.type == "fence" else ""
        self._add("code", tok.content.rstrip("\n"), chunk["id"], start + 1, end,
                  code_language=lang, context=self._context(start, end))

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
        if "<table" in content.lower():
            chunk = self._ensure_chunk(start)
            cells = [html.unescape(_TAG.sub(" ", c)).strip()
                     for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", content, re.I | re.S)]
            self._add("table", content.strip(), chunk["id"], start + 1, end, table_format="html",
                      header=cells[:8], rows=content.lower().count("<tr"), context=self._context(start, end))
        for m in _HREF.finditer(content):
            self._link(m.group(1) or m.group(2) or "", self._ensure_chunk(start))
        for m in _IMG_SRC.finditer(content):
            src = m.group(1) or m.group(2) or m.group(3) or ""
            alt = _IMG_ALT.search(m.group(0))
            self._image(src, (alt.group(1) or alt.group(2)) if alt else "", self._ensure_chunk(start), start)

    def _inline(self, tok) -> None:
        start = tok.map[0] if tok.map else 0
        chunk = self._ensure_chunk(start)
        text = inline_text(tok)
        if text:
            chunk["meta"]["filter"].append(text)
        self._links_of(tok)
        self._images_of(tok, chunk, start)

    def _links_of(self, tok) -> None:
        for child in tok.children or []:
            if child.type == "link_open":
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
        rel = parts.path.lstrip("/") if parts.path.startswith("/") else posixpath.join(self.dir, parts.path)
        rel = posixpath.normpath(rel)
        if rel.startswith("../") or rel == ".." or rel.startswith("/"):
            return None  # outside the docs root
        return rel

    def _link(self, href: str, chunk: dict | None) -> None:
        if chunk is None or not href or href.startswith("#"):
            return
        parts = urlsplit(href.strip())
        if not parts.path.lower().endswith(".md") or parts.scheme:
            return
        rel = self._resolve(href.split("#")[0])
        if rel is None:
            self.page.problems.append(f"link outside the docs root: {href}")
            return
        if not self.exists(rel):
            self.page.problems.append(f"broken link: {href} -> {rel}")
        self.page.links.append((chunk["id"], rel, parts.fragment))

    def _image(self, src: str, alt: str, chunk: dict, line: int) -> None:
        rel = self._resolve(src)
        key = f"img{len(self.page.images)}"
        if rel is None:
            self.page.problems.append(f"image not read (remote or outside the docs root): {src}")
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
            c["text"] = "\n".join(self.lines[c["line_start"] - 1:c["line_end"]]).strip()
            c["prose"] = "\n".join(c["meta"].pop("filter", []))
            c["content_hash"] = content_hash(c["text"])
        self.page.nodes = [n for n in self.page.nodes if n["type"] != "chunk" or n["text"] or n["prose"]]


def parse_page(path: str, text: str, *, context_lines: int = 15, exists=lambda p: True) -> ParsedPage:
    """Parse one page (its path relative to the docs root, POSIX separators)."""
    tokens = _PARSER.parse(text)
    return _PageParser(path, text, context_lines, exists).run(tokens)
