"""Index a docs folder into the one file: incremental, resumable, one page per transaction.

A page whose bytes are unchanged is skipped; a changed page is diffed node by node (a node
whose content is unchanged keeps its vector); a page gone from disk is deleted. Vectors are
computed last, in committed batches, for nodes that have none: an interrupted run resumes.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..core import url_of
from ..embed import Progress, embed_pending
from ..errors import ConfigError
from ..store import Store
from . import extractive
from .dedup import merge_near_duplicates
from .images import ImageRejected, read_image
from .markdown import ImageRef, ParsedPage, node_id, parse_page


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
    embedded: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def list_pages(root: Path, include: str = "") -> list[str]:
    """Markdown pages under root (POSIX paths relative to it); symlinks leading out are dropped.
    `include`: comma-separated globs (e.g. "en/*,zh-cn/guide/*"); empty means every page."""
    root_real = os.path.realpath(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root_real):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.lower().endswith(".md"):
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


def source_url(settings: Settings, path: str, line: int | None, line_end: int | None) -> str:
    try:
        return url_of(settings.url_template, path, line, line_end)
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
        self._exists_cache: dict[str, bool] = {}
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
        if pages is None:
            pages = list_pages(self.root, self.s.include)
        self.report.files_seen = len(pages)
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
            merge_near_duplicates(self.store, self.s)
            exact = len(self._image_files) - len(set(self._image_files.values()))
            self.report.images_merged = self.store.images.merged_count() + exact
            self.store.images.drop_unused()
        if embedder is not None:
            self.report.embedded = embed_pending(self.store, embedder, self.s, self.progress)
        self.report.skipped = self.store.logs.skipped_files()
        self.report.seconds = time.perf_counter() - t0
        return self.report

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
        digest = hashlib.sha256(data).hexdigest()
        if logged and logged[0] == digest and logged[1] in ("ok", "skipped"):
            self.report.files_unchanged += 1
            return None
        try:
            text = decode_page(data)
            page = parse_page(path, text, context_lines=self.s.context_lines, exists=self._exists)
        except (ValueError, RecursionError) as exc:
            return self._skip(path, digest, str(exc))
        with self.store.transaction():
            n = self._write_page(page, digest)
            self.store.logs.log_file(path, digest, "ok", "; ".join(page.problems)[:2000], n)
        self.report.files_indexed += 1
        self.report.problems.extend(f"{path}: {p}" for p in page.problems)
        return None

    def _skip(self, path: str, digest: str | None, reason: str) -> None:
        with self.store.transaction():
            old = self.store.nodes.of_file(path)
            self.store.nodes.delete([r for r, _ in old.values()])
            self.store.logs.log_file(path, digest, "skipped", reason)

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
        for n in out:
            n["summary_source"] = "extractive"
            n["source_url"] = source_url(self.s, page.path, n.get("line_start"), n.get("line_end"))
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


def index_folder(settings: Settings, store: Store, embedder=None, progress: Progress | None = None,
                 pages: list[str] | None = None) -> IndexReport:
    return Indexer(settings, store, progress).run(embedder, pages)
