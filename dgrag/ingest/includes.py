"""Includes, read as the generators read them: before the Markdown is parsed, within a root.

Every include syntax below is a preprocessor in its own generator (text in, text out), so it
is one here too, with a line map back to the page's own lines:

- mdBook: `{{#include path}}`, `{{#rustdoc_include path}}`, with `:from:to` line ranges and
  `:anchor` (between `ANCHOR: name` and `ANCHOR_END: name`);
- pymdownx.snippets: `--8<-- "path"` (also `:from:to` and `:section` with `[start:name]`),
  and the block form between two `--8<--` lines;
- FastAPI's code include `{* path hl[..] ln[..] *}`: the file as a fenced block, `ln` picks lines;
- markdown-include / mdx_include: `{! path !}`, `{!> path !}`, with mdx_include's line ranges
  `{! path [ln:3-7,12-] !}`;
- VitePress: `<!--@include: path{from,to}-->` and `#region`;
- Hugo's include shortcodes (themes' and sites' own, by their common names): `{{< readfile
  file="path" >}}` (Docsy: from the page's folder; `code="true" lang="go"` as a code block) and
  `{{% include "/path.md" %}}` (from the content folder), the included page's front matter left out;
- GitBook (`gitbook=True`): `{% openapi src="spec.yaml" path="/v1/x" method="post" %}` ... `{% endopenapi %}`,
  the operation rendered from the spec file (`openapi.operation`);
- MyST (a Sphinx site's pages, `myst=True`): the `{include}` directive, as a fence or a colon
  fence, with its `:start-line:` / `:end-line:`, `:start-after:` / `:end-before:`,
  `:heading-offset:` and `:literal:` options (MyST parses the file in place, as Markdown).

MyST's `{literalinclude}` and Docusaurus's raw-loader imports are directives of the parsed
page and go through `Includes.read_code`. A path outside the include root is refused, a
missing file reported; neither is fatal, and the directive leaves no raw text behind.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import openapi
from .dialects import directive_of, markdown_bodied
from .shortcodes import tag_args

_MDBOOK = re.compile(r"(?<!\\)\{\{#(include|rustdoc_include|playground)\s+([^}\s]+)\s*\}\}")
_SNIPPET = re.compile(r"""^(\s*)-{1,}8<-{1,}\s+(["'])([^"']+)\2\s*$""")
_SNIPPET_FENCE = re.compile(r"^\s*-{1,}8<-{1,}\s*$")
_FASTAPI = re.compile(r"^\s*\{\*\s*([^\s*]+)(\s[^*]*)?\*\}\s*$")
_MDINCLUDE = re.compile(r"\{![<>]?\s*([^!\s\[]+)\s*(?:\[ln:([^\]]*)\])?\s*!\}")
_VP_SNIPPET = re.compile(r"^\s*<<<\s+(\S+?)(?:\{[^}]*\})?(?:\s+\[[^\]]*\])?\s*$")
_VITEPRESS = re.compile(r"<!--\s*@include:\s*([^\s{#]+?)(?:#([\w-]+))?(?:\{(\d*),(\d*)\})?\s*-->")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")
_HUGO = re.compile(r"""^\s*\{\{[<%]\s*(readfile|include)\s+(?:file=)?(["']?)([^"'\s<>%]+)\2([^<>%]*)[>%]\}\}\s*$""")
_MYST_INCLUDE = re.compile(r"^(\s{0,3})(`{3,}|~{3,}|:{3,})\s*\{include\}\s+(\S.*?)\s*$")
_MD_LINK = re.compile(r"(!?)\[([^\]]*)\]\(\s*<?([^)\s>]+)")  # a Markdown link or image, up to its target
_OPENAPI = re.compile(r"^\s*\{%\s*openapi\s+([^%]*)%\}\s*$")
_OPENAPI_END = re.compile(r"^\s*\{%\s*endopenapi\s*%\}\s*$")
_MYST_OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*?)\s*$")
# the code files a parsed page's directives read (`read_code`), found before parsing: MyST's
# literalinclude (a fence or a colon fence) and an MDX raw-loader import
_DIRECTIVE_FILE = re.compile(r"^\s*(?:`{3,}|~{3,}|:{3,})\s*\{literalinclude\}\s+(\S+)"
                             r"|import\s+\w+\s+from\s+['\"]!!?raw-loader!([^'\"]+)['\"]", re.M)
_ANCHOR_LINE = re.compile(r"(ANCHOR|ANCHOR_END):\s*[\w-]+")
_SECTION_LINE = re.compile(r"-{1,}8<-{1,}\s*\[(start|end):[\w-]+\]")
EXT_LANG = {"py": "python", "js": "javascript", "ts": "typescript", "jsx": "jsx", "tsx": "tsx", "rs": "rust",
            "go": "go", "java": "java", "kt": "kotlin", "rb": "ruby", "sh": "bash", "toml": "toml", "yml": "yaml",
            "yaml": "yaml", "json": "json", "html": "html", "css": "css", "vue": "vue", "c": "c", "cpp": "cpp",
            "h": "c", "cs": "csharp", "swift": "swift", "php": "php", "sql": "sql", "txt": "text", "md": "markdown"}
MAX_DEPTH = 4


@dataclass
class IncludeReport:
    read: set[str] = field(default_factory=set)       # files read, relative to the include root
    refused: list[str] = field(default_factory=list)  # outside the include root
    missing: list[str] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # file -> sha256, for the page's digest
    bytes_read: int = 0  # all the page's includes together, bounded (an include of an include of ...)

    def digest(self) -> str:
        return hashlib.sha256("\n".join(f"{k}\t{v}" for k, v in sorted(self.digests.items())).encode()).hexdigest()


class Includes:
    """Reads includes for the pages under `docs_root`, confined to `include_root`."""

    def __init__(self, docs_root: Path, include_root: Path, bases: list[str] | None = None,
                 max_bytes: int = 2 * 1024 * 1024, myst: bool = False, hugo: bool = False, gitbook: bool = False):
        self.myst = myst  # MyST's `{include}` directive is read too (a Sphinx site's pages)
        self.hugo = hugo  # and Hugo's include shortcodes (a Hugo site's pages)
        self.gitbook = gitbook  # and GitBook's `{% openapi %}` blocks
        self.docs_root = Path(os.path.realpath(docs_root))
        self.root = Path(os.path.realpath(include_root))
        self.bases = bases or [""]  # folders (relative to the docs root) snippet paths start from
        self.max_bytes = max_bytes

    # ---- reading one file, confined -----------------------------------------------------
    def _resolve(self, target: str, from_dir: str, report: IncludeReport, bases: bool = False,
                 starts: list[str] | None = None) -> Path | None:
        target = target.strip().strip("\"'")
        if not target or "\x00" in target or re.match(r"^[a-z]+://", target):
            report.missing.append(target)
            return None
        starts = starts if starts is not None else [from_dir] + (self.bases if bases else [])
        refused = False
        for start in starts:
            full = Path(os.path.realpath(self.docs_root / start / target)) if not target.startswith("/") \
                else Path(os.path.realpath(self.root / target.lstrip("/")))
            if full != self.root and not str(full).startswith(str(self.root) + os.sep):
                refused = True
                continue
            if full.is_file():
                return full
        (report.refused if refused else report.missing).append(target)
        return None

    def _read(self, full: Path, report: IncludeReport) -> list[str] | None:
        try:
            size = full.stat().st_size
            if size > self.max_bytes or report.bytes_read + size > self.max_bytes * 4:
                report.missing.append(f"{full.name} (past the include limit: {self.max_bytes} bytes a file, "
                                      f"{self.max_bytes * 4} a page)")
                return None
            report.bytes_read += size
            data = full.read_bytes()
        except OSError as exc:
            report.missing.append(f"{full.name} ({exc.strerror})")
            return None
        rel = os.path.relpath(full, self.root).replace(os.sep, "/")
        report.read.add(rel)
        report.digests[rel] = hashlib.sha256(data).hexdigest()
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")

    def read_code(self, target: str, page_path: str, report: IncludeReport) -> str | None:
        """A code file a parsed directive names (MyST literalinclude, Docusaurus raw-loader)."""
        full = self._resolve(target, posixpath.dirname(page_path), report)
        lines = self._read(full, report) if full else None
        return "\n".join(lines).rstrip("\n") if lines is not None else None

    def code_file_digests(self, page_path: str, text: str) -> dict[str, str]:
        """file -> sha256 of each code file the page's directives name (`read_code` reads them
        while the page is parsed, after its digest is taken): so that a change to one of them
        indexes the page again, as a change to a file it includes does."""
        scratch = IncludeReport()
        for m in _DIRECTIVE_FILE.finditer(text):
            self.read_code(m.group(1) or m.group(2), page_path, scratch)
        return scratch.digests

    # ---- expanding a page -------------------------------------------------------------------
    def expand(self, page_path: str, text: str) -> tuple[str, list[int], IncludeReport]:
        """The page with its includes read in; line i of the result is line map[i] of the page."""
        report = IncludeReport()
        lines = text.split("\n")
        if not _has_include(text) and not (self.myst and "{include}" in text) and not (self.hugo and "{{" in text) \
                and not (self.gitbook and "openapi" in text):
            return text, list(range(len(lines))), report
        out: list[str] = []
        line_map: list[int] = []
        for i, piece in self._lines(lines, posixpath.dirname(page_path), report, 0):
            out.append(piece)
            line_map.append(i)
        return "\n".join(out), line_map, report

    def _lines(self, lines: list[str], from_dir: str, report: IncludeReport, depth: int):
        i, fence, opened = 0, "", []  # `opened`: the Markdown-bodied MyST directives' fences around the line
        while i < len(lines):
            line = lines[i]
            inc = _MYST_INCLUDE.match(line) if self.myst and not fence else None
            end = _closing(lines, i, inc.group(2)) if inc else None
            if end is not None:  # MyST's {include}: the file's text in place of the directive
                if depth < MAX_DEPTH:
                    yield from ((i, s) for s in self._myst_include(inc.group(3), lines[i + 1:end], from_dir,
                                                                  report, depth))
                i = end + 1
                continue
            api = _OPENAPI.match(line) if self.gitbook and not fence else None
            end = next((j for j in range(i + 1, min(len(lines), i + 8)) if _OPENAPI_END.match(lines[j])), None) if api else None
            got = self._openapi(api.group(1), from_dir, report) if end is not None else None
            if got is not None:  # the operation as the published page shows it, in the block's place
                yield from ((i, s) for s in got)
                i = end + 1
                continue
            m = _FENCE.match(line)
            if m and not fence and self.myst and _directive_fence(m, opened):
                pass  # its body is Markdown: an include in a tab or a note is read
            elif m and (not fence or (m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip())):
                fence = "" if fence else m.group(1)
            if _SNIPPET_FENCE.match(line) and depth < MAX_DEPTH:
                end = next((j for j in range(i + 1, len(lines)) if _SNIPPET_FENCE.match(lines[j])), None)
                if end is not None:
                    for target in (t.strip() for t in lines[i + 1:end]):
                        if target and not target.startswith(";"):
                            yield from ((i, s) for _, s in self._snippet(target, from_dir, report, depth))
                    i = end + 1
                    continue
            for piece in self._one_line(line, from_dir, report, depth, bool(fence)):
                yield i, piece
            i += 1

    def _one_line(self, line: str, from_dir: str, report: IncludeReport, depth: int, in_fence: bool = False):
        if depth >= MAX_DEPTH or not (_has_include(line) or self.hugo and "{{" in line):
            yield line
            return
        m = _SNIPPET.match(line)
        if m:  # the snippet takes the directive's indentation (inside a tab or a list)
            yield from (m.group(1) + s if s else s for _, s in self._snippet(m.group(3), from_dir, report, depth))
            return
        m = _HUGO.match(line) if self.hugo and not in_fence else None
        if m:
            yield from self._hugo_include(m.group(1), m.group(3), m.group(4), from_dir, report, depth)
            return
        m = _FASTAPI.match(line)
        if m:
            yield from self._code_include(m.group(1), m.group(2) or "", from_dir, report)
            return
        m = None if in_fence else _VP_SNIPPET.match(line)
        if m:  # VitePress `<<< @/snippets/file.ts#region` ("@": the source folder), a block of its own: not in a fence
            target, _, region = m.group(1).partition("#")
            yield from self._code_include(target.replace("@/", "/", 1) if target.startswith("@/") else target,
                                          "", from_dir, report, region)
            return
        for rx, kind in ((_MDBOOK, "mdbook"), (_VITEPRESS, "vitepress"), (_MDINCLUDE, "mdinclude")):
            m = rx.search(line)
            if m:
                got = self._inline(kind, m, from_dir, report, depth)
                head, tail = line[:m.start()], line[m.end():]
                if not got:
                    rest = (head + tail).strip()
                    if rest:
                        yield head + tail
                    return
                got[0], got[-1] = head + got[0], got[-1] + tail
                yield from got
                return
        yield line

    def _inline(self, kind: str, m, from_dir: str, report: IncludeReport, depth: int) -> list[str]:
        if kind == "mdbook":  # mdBook reads the includes of an included file too
            target, sel = _split_selector(m.group(2))
            full = self._resolve(target, from_dir, report)
            lines = self._read(full, report) if full else None
            if lines is None:
                return []
            lines = _strip_markers(_select(lines, sel))
        elif kind == "vitepress":
            full = self._resolve(m.group(1), from_dir, report)
            lines = self._read(full, report) if full else None
            if lines is None:
                return []
            if m.group(2):
                lines = _region(lines, m.group(2))
            a, b = m.group(3), m.group(4)
            lines = lines[(int(a) - 1 if a else 0):(int(b) if b else None)]
        else:
            full = self._resolve(m.group(1), from_dir, report, bases=True)
            lines = self._read(full, report) if full else None
            if lines is None:
                return []
            if m.group(2) is not None:
                lines = _line_ranges(lines, m.group(2))
        sub = os.path.relpath(full.parent, self.docs_root).replace(os.sep, "/")
        return [s for _, s in self._lines(lines, sub, report, depth + 1)]

    def _openapi(self, args: str, from_dir: str, report: IncludeReport) -> list[str] | None:
        opts = tag_args(args)
        if not opts.get("src") or not opts.get("path") or not opts.get("method"):
            return None  # a spec GitBook holds by name (`openapi-operation spec=`), not a file: left to the parser
        full = self._resolve(opts["src"], from_dir, report)
        lines = self._read(full, report) if full else None
        if lines is None:
            return None
        got = openapi.operation("\n".join(lines), opts["path"], opts["method"])
        if got is None:
            report.missing.append(f"{opts['src']} ({opts['method'].upper()} {opts['path']} not in the spec)")
        return got

    def _snippet(self, target: str, from_dir: str, report: IncludeReport, depth: int):
        target, sel = _split_selector(target)
        full = self._resolve(target, from_dir, report, bases=True)
        lines = self._read(full, report) if full else None
        if lines is None:
            return
        sub = os.path.relpath(full.parent, self.docs_root).replace(os.sep, "/")
        yield from self._lines(_strip_markers(_select(lines, sel)), sub, report, depth + 1)

    def _myst_include(self, target: str, body: list[str], from_dir: str, report: IncludeReport, depth: int):
        if target.strip().startswith("/"):  # Sphinx: from the source folder (conf.py's), not the repository
            full = self._resolve(target.strip().lstrip("/"), from_dir, report,
                                 starts=sorted(self.bases, key=lambda b: b == ""))
        else:
            full = self._resolve(target, from_dir, report)
        lines = self._read(full, report) if full else None
        if lines is None:
            return
        opts = dict(m.groups() for m in map(_MYST_OPTION.match, body) if m)
        try:
            text = "\n".join(lines[int(opts.get("start-line") or 0):int(opts["end-line"]) if opts.get("end-line") else None])
        except ValueError:
            text = "\n".join(lines)
        if opts.get("start-after") and opts["start-after"] in text:
            text = text[text.index(opts["start-after"]) + len(opts["start-after"]):]
        if opts.get("end-before") and opts["end-before"] in text:
            text = text[:text.index(opts["end-before"])]
        if "literal" in opts or "code" in opts:
            yield from _fenced(text.rstrip("\n").split("\n"),
                               opts.get("code") or EXT_LANG.get(full.suffix.lstrip(".").lower(), ""))
            return
        offset = int(opts["heading-offset"]) if str(opts.get("heading-offset", "")).isdigit() else 0
        sub = os.path.relpath(full.parent, self.docs_root).replace(os.sep, "/")
        lines = _offset_headings(text.split("\n"), offset)
        if "relative-docs" in opts or "relative-images" in opts:
            lines = _relative_links(lines, opts, sub, from_dir)
        for _, s in self._lines(lines, sub, report, depth + 1):
            yield s

    def _hugo_include(self, kind: str, target: str, args: str, from_dir: str, report: IncludeReport, depth: int):
        """readfile: from the page's folder (`/x`: the include root); include: from the content
        folders (Hugo's `site.GetPage` path). Markdown in place, or code where `code="true"`."""
        if kind == "include":
            full = self._resolve(target.lstrip("/"), from_dir, report, starts=[b for b in self.bases if b] or [""])
        else:
            full = self._resolve(target, from_dir, report)
        lines = self._read(full, report) if full else None
        if lines is None:
            return
        if re.search(r"""\bcode=["']?true""", args):
            lang = re.search(r"""\blang=["']?([\w+#-]+)""", args)
            while lines and not lines[-1].strip():  # the file's last newline ends no line of code
                lines = lines[:-1]
            yield from _fenced(lines, lang.group(1) if lang else EXT_LANG.get(full.suffix.lstrip(".").lower(), ""))
            return
        sub = os.path.relpath(full.parent, self.docs_root).replace(os.sep, "/")
        yield from (s for _, s in self._lines(_without_front_matter(lines), sub, report, depth + 1))

    def _code_include(self, target: str, options: str, from_dir: str, report: IncludeReport, region: str = ""):
        full = self._resolve(target.lstrip("/"), from_dir, report, bases=True) if target.startswith("/") \
            else self._resolve(target, from_dir, report, bases=True)
        lines = self._read(full, report) if full else None
        if lines is None:
            return
        picked = _pick_lines(_region(lines, region) if region else lines, options)
        yield from _fenced(picked, EXT_LANG.get(full.suffix.lstrip(".").lower(), ""))


def _fenced(lines: list[str], lang: str):
    """A file's lines as a code block of `lang`, fenced longer than any fence inside it."""
    fence = fence_for("\n".join(lines))
    yield f"{fence}{lang}"
    yield from lines
    yield fence


def _without_front_matter(lines: list[str]) -> list[str]:
    """An included page's lines without its front matter (`---` or `+++` lines around it)."""
    if lines and lines[0].strip() in ("---", "+++"):
        end = next((j for j in range(1, len(lines)) if lines[j].strip() == lines[0].strip()), None)
        if end is not None:
            return lines[end + 1:]
    return lines


def _has_include(text: str) -> bool:
    return "{{#" in text or "8<-" in text or "{*" in text or "{!" in text or "@include" in text or "<<<" in text


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`, so the text is kept as it is."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def _directive_fence(m: re.Match, opened: list[str]) -> bool:
    """Whether fence line `m` opens or closes a Markdown-bodied MyST directive (`opened` kept)."""
    marker, info = m.group(1), m.group(2).strip()
    if opened and not info and marker == opened[-1]:
        opened.pop()
        return True
    directive = directive_of(info)
    if directive and markdown_bodied(directive[0]):
        opened.append(marker)
        return True
    return False


def _closing(lines: list[str], start: int, marker: str) -> int | None:
    """The line closing the fence (or colon fence) `marker` opened at `start`, None if none."""
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if s and s[0] == marker[0] and len(s) >= len(marker) and s == s[0] * len(s):
            return j
    return None


def _relative_links(lines: list[str], opts: dict, included_dir: str, page_dir: str) -> list[str]:
    """MyST's `:relative-docs: PREFIX` / `:relative-images:`: a link starting with PREFIX (an
    image: any relative one) is resolved from the included file's folder, as the page's link."""
    prefix = opts.get("relative-docs")

    def fix(m: re.Match) -> str:
        bang, target = m.group(1), m.group(3)
        rebase = (bang and "relative-images" in opts) or (not bang and prefix and target.startswith(prefix))
        if not rebase or re.match(r"^[a-z][\w+.-]*:|^[#/]", target):
            return m.group(0)
        moved = posixpath.relpath(posixpath.normpath(posixpath.join(included_dir, target)), page_dir or ".")
        return f"{bang}[{m.group(2)}]({moved}"

    return [_MD_LINK.sub(fix, s) for s in lines]


def _offset_headings(lines: list[str], offset: int) -> list[str]:
    """MyST's `:heading-offset:`: each ATX heading outside code fences `offset` levels deeper."""
    if not offset:
        return lines
    out, fence = [], ""
    for s in lines:
        m = _FENCE.match(s)
        if m and (not fence or (m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence))):
            fence = "" if fence else m.group(1)
        out.append("#" * offset + s.lstrip() if not fence and re.match(r"^ {0,3}#{1,6}(\s|$)", s) else s)
    return out


def _split_selector(target: str) -> tuple[str, str]:
    """"path:2:10" -> ("path", "2:10"); "path:name" -> ("path", "name")."""
    target = target.strip()
    m = re.match(r"^(.+?\.[\w-]+)(?::(.*))?$", target)
    return (m.group(1), m.group(2) or "") if m else (target, "")


def _select(lines: list[str] | None, sel: str) -> list[str]:
    if lines is None or not sel:
        return lines or []
    m = re.match(r"^(\d*)(?::(\d*))?$", sel)
    if m:
        a, b = m.group(1), m.group(2)
        if b is None:  # "path:5": that line only
            return lines[int(a) - 1:int(a)] if a else lines
        return lines[(int(a) - 1 if a else 0):(int(b) if b else None)]
    # an anchor: mdBook's ANCHOR / ANCHOR_END, or pymdownx's [start:name] / [end:name]
    start = next((i for i, s in enumerate(lines) if re.search(rf"(ANCHOR:\s*|\[start:){re.escape(sel)}\b", s)), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines))
                if re.search(rf"(ANCHOR_END:\s*|\[end:){re.escape(sel)}\b", lines[i])), len(lines))
    return lines[start + 1:end]


def _line_ranges(lines: list[str], spec: str) -> list[str]:
    """mdx_include's `[ln:1-7,12,20-]`: those lines (1-based, a range's ends included; a
    `line.column` end counts as its line); nothing where the spec names no line."""
    keep: list[int] = []
    if lines and lines[-1] == "":  # the file's last newline ends its last line: no line after it
        lines = lines[:-1]
    for part in spec.split(","):
        a, dash, b = part.strip().partition("-")
        a, b = a.split(".")[0].strip(), b.split(".")[0].strip()
        if not (a.isdigit() or b.isdigit()):
            continue
        lo = int(a) if a.isdigit() else 1
        hi = (int(b) if b.isdigit() else len(lines)) if dash else lo
        keep.extend(range(lo, min(hi, len(lines)) + 1))
    return [lines[i - 1] for i in keep if 0 < i <= len(lines)]


def _strip_markers(lines: list[str]) -> list[str]:
    return [s for s in lines if not _ANCHOR_LINE.search(s) and not _SECTION_LINE.search(s)]


def _region(lines: list[str], name: str) -> list[str]:
    start = next((i for i, s in enumerate(lines) if re.search(rf"#region\s+{re.escape(name)}\b", s)), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if re.search(r"#endregion\b", lines[i])), len(lines))
    return lines[start + 1:end]


def _pick_lines(lines: list[str], options: str) -> list[str]:
    """FastAPI's `ln[3:7,12]`: those lines (1-based); without it, the whole file."""
    m = re.search(r"\bln\[([^\]]*)\]", options)
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if not m:
        return lines
    keep: list[int] = []
    for part in m.group(1).split(","):
        a, _, b = part.strip().partition(":") if ":" in part else (part.strip(), "", part.strip())
        if a.strip().isdigit() or b.strip().isdigit():
            lo = int(a) if a.strip().isdigit() else 1
            hi = min(int(b) if b.strip().isdigit() else len(lines), len(lines))  # the page's number is not trusted
            keep.extend(range(lo, hi + 1))
    return [lines[i - 1] for i in sorted(set(keep)) if 0 < i <= len(lines)]
