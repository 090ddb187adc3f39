"""Index a docs folder into the one file: incremental, resumable, one page per transaction.

A page whose bytes are unchanged is skipped; a changed page is diffed node by node (a node
whose content is unchanged keeps its vector); a page gone from disk is deleted. Vectors are
computed last, in committed batches, for nodes that have none: an interrupted run resumes.
A page read by an older reader (`READER`) counts as changed: after an upgrade that reads pages
differently, the next run parses every page again and embeds only the nodes that now differ.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..core import url_of
from ..embed import Progress, embed_pending
from ..errors import ConfigError
from ..kernels.tokens import release_page
from ..store import Store
from . import extractive
from .dedup import merge_near_duplicates
from .dialects import raw_markers
from .images import ImageRejected, read_image
from .includes import IncludeReport, Includes
from .markdown import parse_page
from .page import ImageRef, ParsedPage, node_id
from .site import PAGE_EXTS, Site, detect_site
from .xref import RULES as XREF_RULES
from .xref import api_edges


# The reader's version, kept with each page's digest in the files table. Raise it when a change
# under ingest/ makes an unchanged page read differently (a heading, a code block, a URL).
# 2: Hugo's self-closing code shortcodes no longer swallow what follows them.
# 3: Hugo's escaped shortcodes (`{{</* x */>}}`) read as the calls they show.
READER = 3


def logged_digest(digest: str) -> str:
    """What the files table keeps of a page: its digest and the reader that read it."""
    return f"{digest}:r{READER}"


def read_logged(value: str | None) -> tuple[str | None, int]:
    """(the page's digest, the reader's version) of a files-table value (reader 1: no suffix)."""
    digest, sep, reader = (value or "").rpartition(":r")
    return (digest, int(reader)) if sep and reader.isdigit() else (value, 1)


def read_by_older_reader(value: str | None) -> bool:
    """A page some older reader read (not one never read: an unreadable file keeps no digest)."""
    return value is not None and read_logged(value)[1] != READER


@dataclass
class IndexReport:
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    nodes_added: dict[str, int] = field(default_factory=dict)
    images_merged: int = 0
    jump_edges: int = 0
    api_edges: int = 0  # a section naming an API -> the reference section defining it (ingest/xref.py)
    embedded: int = 0
    seconds: float = 0.0
    site: dict = field(default_factory=dict)      # the generator, its config, URLs and languages
    dialect: dict = field(default_factory=dict)   # what was recognised, included, left raw (DialectReport)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class DialectReport:
    """What the site's Markdown held, over the pages parsed this run."""

    recognised: dict[str, int] = field(default_factory=dict)  # front matter, admonition, tab, ... -> count
    includes_read: set[str] = field(default_factory=set)
    includes_refused: list[str] = field(default_factory=list)  # "page: target", outside the include root
    includes_missing: list[str] = field(default_factory=list)
    left_raw: dict[str, int] = field(default_factory=dict)  # markers still in a breadcrumb or embedded text
    pages_outside_site: int = 0
    drafts: list[str] = field(default_factory=list)
    reference_stubs: list[str] = field(default_factory=list)  # generated reference pages (mkdocstrings, autodoc)
    release_notes: list[str] = field(default_factory=list)  # pages of release notes (`kernels.tokens.release_page`)

    def add_page(self, page: ParsedPage, inc: IncludeReport) -> None:
        for k, v in page.recognised.items():
            self.recognised[k] = self.recognised.get(k, 0) + v
        self.includes_read |= inc.read
        self.includes_refused += [f"{page.path}: {t}" for t in inc.refused]
        self.includes_missing += [f"{page.path}: {t}" for t in inc.missing]
        if page.recognised.get("generated reference"):
            self.reference_stubs.append(page.path)
        if release_page([n["breadcrumb"].split(" / ") for n in page.nodes if n["type"] == "chunk"]):
            self.release_notes.append(page.path)
        for n in page.nodes:
            for k, v in raw_markers(f"{n['breadcrumb']}\n{n.get('prose') or ''}").items():
                self.left_raw[k] = self.left_raw.get(k, 0) + v

    def as_dict(self) -> dict:
        return {"recognised": dict(sorted(self.recognised.items())), "includes_read": len(self.includes_read),
                "includes_refused": self.includes_refused[:50], "includes_missing": self.includes_missing[:50],
                "left_raw": self.left_raw, "pages_outside_site": self.pages_outside_site,
                "drafts": self.drafts[:50], "reference_stubs": self.reference_stubs[:50],
                "release_notes": self.release_notes[:50]}


def site_pages(root: Path, site: Site, include: str = "") -> tuple[list[str], int]:
    """The pages the site publishes (its content folders, mdBook's SUMMARY, in nav order where
    it has one), and how many Markdown files beside them it does not."""
    every = list_pages(root, include)
    pages = [p for p in every if site.publishes(p)] if site.parts else every
    return pages, len(every) - len(pages)


def list_pages(root: Path, include: str = "") -> list[str]:
    """Markdown pages under root (POSIX paths relative to it); symlinks leading out are dropped.
    `include`: comma-separated globs (e.g. "en/*,zh-cn/guide/*"); empty means every page."""
    root_real = os.path.realpath(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root_real):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.lower().endswith(PAGE_EXTS):
                continue
            full = os.path.join(dirpath, name)
            real = os.path.realpath(full)
            if not real.startswith(root_real + os.sep):
                continue
            out.append(os.path.relpath(full, root_real).replace(os.sep, "/"))
    globs = [g.strip() for g in include.split(",") if g.strip()]
    if globs:
        out = [p for p in out if any(fnmatch.fnmatchcase(p, g) for g in globs)]
    return sorted(out)


def decode_page(data: bytes) -> str:
    """UTF-8 (with or without BOM), else GB18030; binary data is refused."""
    if b"\x00" in data[:8192]:
        raise ValueError("binary data, not Markdown")
    for enc in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(enc).replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            continue
    raise ValueError("neither UTF-8 nor GB18030 text")


def source_url(settings: Settings, path: str, line: int | None, line_end: int | None,
               page_url: str | None = None, anchor: str = "") -> str:
    """A node's link: the URL template where one is set; else its section on the published
    site where the site's URL is known; else the path and line."""
    url = (page_url or "") + (f"#{anchor}" if anchor and page_url else "")
    if not settings.url_template and url.startswith(("http://", "https://")):
        return url
    try:
        return url_of(settings.url_template, path, line, line_end, anchor=anchor, url=url.lstrip("/"))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"url_template {settings.url_template!r}: {exc}") from None


class Indexer:
    def __init__(self, settings: Settings, store: Store, progress: Progress | None = None):
        if settings.docs_root is None:
            raise ConfigError("docs_root is not set")
        self.s = settings
        self.store = store
        self.root = Path(settings.docs_root)
        self.progress = progress or (lambda stage, done, total: None)
        self.report = IndexReport()
        self.site = detect_site(self.root, settings.site, settings.site_url) if self.root.is_dir() else Site()
        self.report.site = self.site.describe()
        self.dialect = DialectReport()
        bases = sorted({posixpath.dirname(self.site.config)} | {p.content for p in self.site.parts} | {""})
        self.includes = Includes(self.root, Path(settings.include_root or self.root), bases, settings.max_file_bytes,
                                 myst=self.site.generator == "sphinx", hugo=self.site.generator == "hugo",
                                 gitbook=self.site.generator == "gitbook")
        self._exists_cache: dict[str, bool] = {}
        self.routes: dict[str, str] = {}
        self._image_files: dict[str, str] = {}  # image path -> sha256, this run

    def _exists(self, rel: str) -> bool:
        if rel not in self._exists_cache:
            full = self.root / rel
            self._exists_cache[rel] = full.is_file() and os.path.realpath(full).startswith(
                os.path.realpath(self.root) + os.sep)
        return self._exists_cache[rel]

    def run(self, embedder=None, pages: list[str] | None = None) -> IndexReport:
        """Index every page under the root (or `pages`, an explicit list in that order: the
        index then holds exactly those; the progressive build passes the pages of its batches
        so far)."""
        t0 = time.perf_counter()
        if not self.root.is_dir():
            raise ConfigError(f"docs folder not found: {self.root}")
        if embedder is not None:
            self.store.bind_embedder(embedder.model_id, embedder.dim)
        with self.store.transaction():
            self.store.meta.set("docs_root", str(self.root.resolve()))
            self.store.meta.set("url_template", self.s.url_template)
            self.store.meta.set("site", json.dumps(self.report.site, ensure_ascii=False))
        if pages is None:
            pages, self.dialect.pages_outside_site = site_pages(self.root, self.site, self.s.include)
        self.report.files_seen = len(pages)
        self.routes = self.site.routes(pages)
        self._delete_missing(set(pages))
        log = self.store.logs.files()
        for i, path in enumerate(pages):
            self._one_page(path, log.get(path))
            self.progress("parse", i + 1, len(pages))
        with self.store.transaction():
            if self.report.files_indexed or self.report.files_deleted:
                self.store.nodes.gc_entities()  # entities only the changed pages mentioned
                self.store.semantic.rebuild_edges()
            self.report.jump_edges = self.store.edges.rebuild_jump()
            self.report.api_edges = self._api_edges()
            merge_near_duplicates(self.store, self.s)
            exact = len(self._image_files) - len(set(self._image_files.values()))
            self.report.images_merged = self.store.images.merged_count() + exact
            self.store.images.drop_unused()
        self.report.dialect = self.dialect.as_dict()
        with self.store.transaction():
            self.store.meta.set("dialect", json.dumps(self.report.dialect, ensure_ascii=False))
            self.store.meta.record_indexed(self.store.nodes.counts()["file"])  # what /health and answers name
        if embedder is not None:
            self.report.embedded = embed_pending(self.store, embedder, self.s, self.progress)
        self.report.skipped = self.store.logs.skipped_files()
        self.report.seconds = time.perf_counter() - t0
        return self.report

    def _api_edges(self) -> int:
        """The API edges rebuilt from every page's text (a changed guide or reference changes the
        edges of other pages) when a page changed, or when the index was built before them (its
        meta lacks XREF_RULES, or holds another); otherwise kept (a few seconds on 400 pages)."""
        if not (self.report.files_indexed or self.report.files_deleted) and \
                self.store.meta.get("xref_rules") == XREF_RULES:
            return self.store.edges.counts().get("api", 0)
        self.store.meta.set("xref_rules", XREF_RULES)
        return self.store.edges.replace_of_type("api", api_edges(*self.store.edges.xref_sections()))

    def _delete_missing(self, present: set[str]) -> None:
        for path in sorted(set(self.store.logs.files()) - present):
            with self.store.transaction():
                old = self.store.nodes.of_file(path)
                self.store.nodes.delete([r for r, _ in old.values()])
                for rowid in self.store.nodes.unreferenced_images():
                    self.store.nodes.delete([rowid])
                self.store.logs.forget_file(path)
            self.report.files_deleted += 1

    def _one_page(self, path: str, logged: tuple[str | None, str] | None) -> None:
        full = self.root / path
        try:
            if full.stat().st_size > self.s.max_file_bytes:
                raise ValueError(f"larger than {self.s.max_file_bytes} bytes")
            data = full.read_bytes()
        except (OSError, ValueError) as exc:
            return self._skip(path, None, f"unreadable: {exc}")
        try:
            text = decode_page(data)
        except ValueError as exc:
            return self._skip(path, hashlib.sha256(data).hexdigest(), str(exc))
        text, line_map, inc = self.includes.expand(path, text)
        digest = self._digest(path, data, {**inc.digests, **self.includes.code_file_digests(path, text)})
        if logged and logged[0] == logged_digest(digest) and logged[1] in ("ok", "skipped"):
            self.report.files_unchanged += 1
            return None
        nav = self.site.nav_of(path)
        try:
            page = parse_page(path, text, context_lines=self.s.context_lines, exists=self._exists,
                              slug_rule=self.site.slug_rule, myst=self.site.generator == "sphinx",
                              line_map=line_map, read_code=lambda t: self.includes.read_code(t, path, inc),
                              fallback_title=nav[1] if nav else "",
                              mdx=path.endswith(".mdx") or self.site.generator == "docusaurus",
                              heading_ids=self.site.generator != "starlight",
                              route_of=lambda href: self.site.link_target(href, path, self.routes),
                              head_first=bool(self.site.parts), extensions=self.site.extensions,
                              site_root=self.site.asset_root(path), site_url=self.site.asset_url(path))
        except (ValueError, RecursionError) as exc:
            return self._skip(path, digest, str(exc))
        if page.front.get("draft") is True and self.site.parts:  # a site does not publish its drafts
            self.dialect.drafts.append(path)
            return self._skip(path, digest, "a draft (front matter draft: true): not published")
        if self.site.unrendered(self.root, path, page.front):
            self.dialect.drafts.append(path)
            return self._skip(path, digest, "never rendered (Hugo: headless, or build.render never)")
        self.dialect.add_page(page, inc)
        page.problems += [f"include refused (outside {self.includes.root}): {t}" for t in inc.refused]
        page.problems += [f"include not found: {t}" for t in inc.missing]
        with self.store.transaction():
            n = self._write_page(page, digest)
            self.store.logs.log_file(path, logged_digest(digest), "ok", "; ".join(page.problems)[:2000], n)
        self.report.files_indexed += 1
        self.report.problems.extend(f"{path}: {p}" for p in page.problems)
        return None

    def _digest(self, path: str, data: bytes, included: dict[str, str]) -> str:
        """The page's bytes, and for a site page its URL, included files (`included`: file ->
        sha256) and what of the site's config the reader reads it with (slug rule, Markdown
        extensions, nav title): a page whose include or config changed is parsed again. A plain
        page's digest is its bytes' alone."""
        h = hashlib.sha256(data)
        if included or self.site.parts:
            h.update(f"\0{self.site.page_url(path)}\0{IncludeReport(digests=included).digest() if included else ''}"
                     .encode())
        if self.site.parts:
            nav = self.site.nav_of(path)
            h.update(f"\0{self.site.slug_rule}\0{','.join(self.site.extensions)}\0{nav[1] if nav else ''}".encode())
        return h.hexdigest()

    def _skip(self, path: str, digest: str | None, reason: str) -> None:
        with self.store.transaction():
            old = self.store.nodes.of_file(path)
            self.store.nodes.delete([r for r, _ in old.values()])
            self.store.logs.log_file(path, digest and logged_digest(digest), "skipped", reason)

    # ---- writing one page ---------------------------------------------------------------
    def _write_page(self, page: ParsedPage, digest: str) -> int:
        nodes = self._finish_nodes(page, digest)
        old = self.store.nodes.of_file(page.path)
        rowid_of: dict[str, int] = {}
        for node in nodes:
            have = old.get(node["id"])
            if have is None:
                rowid_of[node["id"]] = self.store.nodes.insert(node)
                self.report.nodes_added[node["type"]] = self.report.nodes_added.get(node["type"], 0) + 1
            elif have[1] == node["content_hash"]:
                self.store.nodes.update_position(have[0], node)
                rowid_of[node["id"]] = have[0]
            else:
                self.store.nodes.update(have[0], node)
                rowid_of[node["id"]] = have[0]
        gone = [r for i, (r, _) in old.items() if i not in rowid_of]
        self.store.nodes.delete(gone)
        own = list(rowid_of.values())
        self.store.edges.delete_from(own, ["contains"])
        edges = [(rowid_of[a], rowid_of[b], "contains", 1.0) for a, b in page.contains if a in rowid_of and b in rowid_of]
        edges += self._image_edges(page, rowid_of)
        self.store.edges.add(edges)
        self.store.edges.replace_links(own, [(rowid_of[c], t, a) for c, t, a in page.links if c in rowid_of])
        for rowid in self.store.nodes.unreferenced_images():
            self.store.nodes.delete([rowid])
        return len(nodes)

    def _finish_nodes(self, page: ParsedPage, digest: str) -> list[dict]:
        chunks = [n for n in page.nodes if n["type"] == "chunk"]
        file_node = {
            "id": node_id("file", page.path), "type": "file", "text": page.title, "breadcrumb": page.title,
            "source_path": page.path, "line_start": 1, "line_end": None, "language": page.language,
            "content_hash": digest, "meta": {"title": page.title, "chunks": len(chunks)},
        }
        file_node["summary"] = extractive.summarize_file(page.title, chunks)
        file_node["meta"]["intro"] = file_node["summary"]  # stable input for an LLM summary
        summarize = {"chunk": extractive.summarize_chunk, "code": extractive.summarize_code,
                     "table": extractive.summarize_table}
        for n in page.nodes:
            n["summary"] = summarize[n["type"]](n)
        out = [file_node] + page.nodes
        page_url = self.site.page_url(page.path, page.front)
        if page_url:
            file_node["meta"]["url"] = page_url
        nav = self.site.nav_of(page.path)
        if nav:
            file_node["meta"]["nav_order"], file_node["meta"]["nav_title"] = nav
        language = self.site.language_of(page.path)
        anchors = _anchors(page)
        for n in out:
            n["summary_source"] = "extractive"
            if language:
                n["language"] = language
            n["source_url"] = source_url(self.s, page.path, n.get("line_start"), n.get("line_end"),
                                         page_url, anchors.get(n["id"], ""))
        return out

    def _image_edges(self, page: ParsedPage, rowid_of: dict[str, int]) -> list[tuple[int, int, str, float]]:
        edges = []
        for ref in page.images:
            if ref.path is None or ref.chunk_id not in rowid_of:
                continue
            try:
                info = read_image(self.root, ref.path, max_bytes=self.s.max_image_bytes,
                                  max_pixels=self.s.max_image_pixels)
            except ImageRejected as exc:
                page.problems.append(str(exc))
                continue
            self._image_files[ref.path] = info.sha256
            self.store.images.put(info.sha256, info.data, info.format, info.width, info.height,
                                 info.dhash, info.phash)
            rep = self.store.images.representative(info.sha256) or info.sha256
            img_rowid = self.store.nodes.image_by_sha(rep)
            if img_rowid is None:
                img_rowid = self.store.nodes.insert(self._image_node(page, ref, rep, info))
                self.report.nodes_added["image"] = self.report.nodes_added.get("image", 0) + 1
            edges.append((rowid_of[ref.chunk_id], img_rowid, "contains", 1.0))
        return edges

    def _image_node(self, page: ParsedPage, ref: ImageRef, sha: str, info) -> dict:
        crumb = next((n["breadcrumb"] for n in page.nodes if n["id"] == ref.chunk_id), page.title)
        caption = extractive.caption_image(ref.alt, ref.src, crumb, ref.context)
        return {
            "id": f"image-{sha[:16]}", "type": "image", "text": caption, "summary": caption,
            "summary_source": "extractive", "breadcrumb": crumb, "source_path": ref.path,
            "line_start": ref.line, "line_end": ref.line, "language": page.language,
            "source_url": source_url(self.s, page.path, ref.line, ref.line), "content_hash": sha,
            "meta": {"sha": sha, "alt": ref.alt, "src": ref.src, "page": page.path, "context": ref.context,
                     "width": info.width, "height": info.height, "format": info.format},
        }


def _anchors(page: ParsedPage) -> dict[str, str]:
    """Node id -> the anchor of its section (a code block or table links to its section's)."""
    out = {n["id"]: n["meta"]["anchor"] for n in page.nodes if n["meta"].get("anchor")}
    for parent, child in page.contains:
        if child not in out and parent in out:
            out[child] = out[parent]
    return out


def index_folder(settings: Settings, store: Store, embedder=None, progress: Progress | None = None,
                 pages: list[str] | None = None) -> IndexReport:
    return Indexer(settings, store, progress).run(embedder, pages)
