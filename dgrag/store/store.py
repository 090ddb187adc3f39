"""The one SQLite index file: a connection, its write lock, and the tables grouped by what
they hold. All SQL of dgrag lives in this package."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import threading
from pathlib import Path
from types import ModuleType
from typing import Iterator

from ..errors import EmbeddingMismatch, IndexFileError
from . import ann, asked, edges, images, logs, meta, nodes, semantic, vectors
from .connect import applied_version, latest_version, migrate, open_connection


class Tables:
    """One table module's functions with the connection filled in: `st.nodes.insert(node)`
    is `nodes.insert(st.con, node)`. Code holding a bare connection calls the module."""

    def __init__(self, module: ModuleType, con):
        self.__doc__ = module.__doc__
        for name in module.__all__:
            setattr(self, name, functools.partial(getattr(module, name), con))


class Store:
    """A handle on one index file. One writer at a time (a lock), many readers (WAL).

    The rows are reached through table groups: `meta`, `nodes`, `edges`, `images`, `vectors`,
    `semantic` (entities, facts), `logs` (ingest and enrichment logs, the LLM cache), `ann`
    (the stored approximate-nearest-neighbour indexes) and `asked` (the question log, feedback). What
    needs the lock or the file itself (transactions, copies, the embedder binding, stats)
    are methods here."""

    def __init__(self, path: Path | str, *, readonly: bool = False, timeout: float = 30.0):
        self.path = Path(path)
        self.readonly = readonly
        self.con = open_connection(self.path, readonly=readonly, timeout=timeout)
        self.write_lock = threading.RLock()
        try:
            current = applied_version(self.con)
            if readonly and 0 < current < latest_version():
                self._upgrade(current)
            elif not readonly or current > latest_version():
                migrate(self.con)  # read-only: only to raise SchemaTooNew with its message
        except IndexFileError:
            self.con.close()
            raise
        for module in (meta, nodes, edges, images, vectors, semantic, logs, ann, asked):
            setattr(self, module.__name__.rsplit(".", 1)[1], Tables(module, self.con))

    def _upgrade(self, current: int) -> None:
        """A file an older dgrag wrote, opened read-only: its schema is upgraded once through
        a connection of its own (the readers' SQL names the current columns)."""
        if not os.access(self.path, os.W_OK):
            raise IndexFileError(
                f"{self.path} has schema version {current} and this dgrag reads version {latest_version()}; "
                "it cannot be upgraded where it is (read-only): copy it somewhere writable and open it there")
        con = open_connection(self.path)
        try:
            migrate(con)
        finally:
            con.close()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; if it changed anything, the graph version moves on
        (which invalidates the persisted graph snapshot) and the file records which dgrag
        wrote it."""
        from .. import __version__

        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            before = self.con.total_changes
            try:
                yield
                if self.con.total_changes != before:
                    self.con.execute(
                        "INSERT INTO meta(key, value) VALUES ('graph_version', 1) ON CONFLICT(key) "
                        "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
                    self.con.execute(
                        "INSERT INTO meta(key, value) VALUES ('dgrag_version', ?) ON CONFLICT(key) "
                        "DO UPDATE SET value = excluded.value WHERE value != excluded.value", (str(__version__),))
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every SELECT inside sees the same committed state."""
        with self.write_lock:
            self.con.execute("BEGIN")
            try:
                yield
            finally:
                self.con.execute("COMMIT")

    def copy_to(self, dest: Path | str, compact: bool = True, int8: bool = True) -> None:
        """A consistent single-file copy (VACUUM INTO), safe while others read and write. A
        compact copy (the default) is then made small (`compact_file`: int8 vectors, centred,
        unless `int8` is False; derivable bytes left out), and vacuumed again: the smallest file
        that answers the same (docs/benchmarks.md, "Index cost")."""
        with self.write_lock:
            self.con.execute("VACUUM INTO ?", (str(dest),))
        if compact:
            compact_file(dest, int8)

    def write_graph_cache(self, version: int, data: bytes) -> bool:
        """Store the graph snapshot if the graph is still at `version` (no version bump: it
        is a cache)."""
        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                if meta.graph_version(self.con) != version:
                    return False
                self.con.execute("INSERT OR REPLACE INTO graph_cache(id, version, data) VALUES (1, ?, ?)",
                                 (version, data))
            finally:
                self.con.execute("COMMIT")
        return True

    def write_meta_cache(self, key: str, value: str, version: int) -> bool:
        """A derived value in meta (e.g. the answerability calibration) if the graph is still at
        `version`; like the graph cache, it does not move the graph version."""
        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                if meta.graph_version(self.con) != version:
                    return False
                meta.set(self.con, key, value)
            finally:
                self.con.execute("COMMIT")
        return True

    def note(self, entries: dict[str, str]) -> None:
        """Write meta entries that are no graph change (bookkeeping: where the docs are, what
        the file was built from): no graph version bump, so the stored graph snapshot stays valid."""
        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                for key, value in entries.items():
                    meta.set(self.con, key, value)
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    def write_ann(self, kind: str, model: str, count: int, fingerprint: str, library: str, data: bytes,
                  built_s: float) -> None:
        """Store the serialized ANN index of `kind` (no graph version bump: like the graph
        snapshot, it is a cache of what the file holds, keyed by its own fingerprint)."""
        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                ann.write(self.con, kind, model, count, fingerprint, library, data, built_s)
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    # ---- the embedder the file is read with -------------------------------------------------
    def bind_embedder(self, model_id: str, dim: int) -> None:
        """Record the embedder on a new index; refuse a file built with another one."""
        if meta.get(self.con, "embedding_model") is None:
            with self.transaction():
                meta.set(self.con, "embedding_model", model_id)
                meta.set(self.con, "embedding_dim", str(dim))
                vectors.create_tables(self.con, dim)
            return
        self.check_embedder(model_id, dim)

    def check_embedder(self, model_id: str, dim: int) -> None:
        have_model, have_dim = meta.get(self.con, "embedding_model"), meta.get(self.con, "embedding_dim")
        if have_model is None:
            return
        if have_model != model_id or int(have_dim or 0) != dim:
            raise EmbeddingMismatch(
                f"{self.path} was built with embedding model {have_model!r} (dim {have_dim}); "
                f"the configured embedder is {model_id!r} (dim {dim}). Configure the same "
                "embedder (DGRAG_EMBEDDER) or rebuild the index into a new file."
            )

    # ---- what the file is ---------------------------------------------------------------------
    def describe(self) -> dict:
        """Its embedding model and dimension, schema version, the dgrag version that last
        wrote it, where its documents came from, what it holds of them (`docs_version`) and the
        offline OpenIE's packs."""
        m = meta.items(self.con)
        dim = m.get("embedding_dim")
        return {"embedding_model": m.get("embedding_model"), "embedding_dim": int(dim) if dim else None,
                "schema_version": applied_version(self.con), "dgrag_version": m.get("dgrag_version"),
                "docs_root": m.get("docs_root"), "url_template": m.get("url_template") or None,
                "site": json.loads(m["site"]) if m.get("site") else None,
                "dialect": json.loads(m["dialect"]) if m.get("dialect") else None,
                "docs_version": meta.docs_version_of(m),
                "openie_packs": json.loads(m["openie_packs"]) if m.get("openie_packs") else None}

    def stats(self) -> dict:
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {"index": self.describe(), "nodes": nodes.counts(self.con), "edges": edges.counts(self.con),
                "vectors": vectors.counts(self.con), "semantic": semantic.counts(self.con),
                "ann": self.ann_stats(), "size_bytes": size}

    def ann_stats(self) -> dict[str, dict]:
        """The stored approximate indexes, by kind: what they index and what they take."""
        out = {}
        for kind in ("fact",):
            h = ann.header(self.con, kind)
            if h is not None:
                out[kind] = {"library": h.library, "vectors": h.count, "bytes": h.bytes, "model": h.model,
                             "built_s": round(h.built_s, 1), "updated_at": h.updated_at}
        return out

    def integrity_check(self) -> str:
        return self.con.execute("PRAGMA integrity_check").fetchone()[0]

    def quick_check(self) -> str:
        """SQLite's quick_check: "ok", or its first finding (cheaper than integrity_check)."""
        return self.con.execute("PRAGMA quick_check").fetchone()[0]


# The compact file's page size, the smaller file of the two. At SQLite's default 4 KiB a node row of
# 1-4 kB (a code block or a table with its summary) leaves much of its page empty: on the whole
# ArkUI-X index 16 KiB pages make the file 3.3 MB smaller. But each of the file's ~75 tables and
# indexes takes a page at least, so a file of short rows (MuSiQue's passages: +0.55 MB) or a
# small one is smaller at 4 KiB. 32 KiB saved nothing more on ArkUI-X.
PAGE_SIZES = (4096, 16384)


def compact_file(path: Path | str, int8: bool = False) -> dict:
    """Make a copy small: migrate it (schema 7 drops the stored context of code and tables),
    rewrite its vector tables in fitted chunks (int8 with `int8`), its PNG images as lossless WebP
    where smaller, its graph snapshot deflated, the source URLs its url_template gives left out,
    the text of code and tables that their chunks hold stored there alone, the index of embedded
    texts (which only embedding reads) left to the first embedding, then VACUUM it (at 4 or 16 KiB pages, whichever file is smaller). Not a graph change: the
    graph version (and so the persisted graph snapshot) stays. Returns what was rewritten:
    vectors per type, (before, after) bytes of the images and the graph snapshot, the URLs left
    out, the page size."""
    con = open_connection(Path(path))
    try:
        migrate(con)
        con.execute("BEGIN IMMEDIATE")
        try:
            out = {"vectors": vectors.compact(con, int8), "images": images.recompress(con),
                   "graph_cache": meta.deflate_graph_cache(con), "texts_once": nodes.store_text_once(con),
                   "urls_derived": nodes.drop_derivable_urls(con), "embed_hash_index": nodes.drop_hash_index(con)}
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        # as VACUUM INTO leaves a copy: a rollback journal, so a read-only folder serves it alone
        # (and the page size can only change outside WAL)
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute(f"PRAGMA page_size={PAGE_SIZES[0]}")
        con.execute("VACUUM")
    finally:
        con.close()
    out["page_size"] = _smaller_with_larger_pages(Path(path))
    return out


def read_header(path: Path | str) -> dict:
    """What a file is, read without changing it (no migration, even of an older schema, which
    opening a Store read-only would do): its schema version, its meta and its pages' digests."""
    con = open_connection(Path(path), readonly=True)
    try:
        version = applied_version(con)
        has_logs = meta.has_table(con, "files")
        return {"schema_version": version, "meta": meta.items(con) if meta.has_table(con, "meta") else {},
                "pages": {p: d for p, (d, _) in logs.files(con).items()} if has_logs else {}}
    finally:
        con.close()


def rollback_journal(path: Path | str) -> None:
    """Leave WAL mode (which opening a file for writing sets): a rollback journal, so that the file
    serves from a read-only folder alone, as `compact_file` leaves a copy."""
    con = open_connection(Path(path))
    try:
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()


def _smaller_with_larger_pages(path: Path) -> int:
    """VACUUM a copy of the file at the larger page size; keep it if it is the smaller file.
    Returns the page size kept."""
    trial = path.with_name(path.name + ".pages")
    shutil.copyfile(path, trial)
    try:
        con = open_connection(trial)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute(f"PRAGMA page_size={PAGE_SIZES[1]}")
            con.execute("VACUUM")
        finally:
            con.close()
        if trial.stat().st_size < path.stat().st_size:
            os.replace(trial, path)
            return PAGE_SIZES[1]
        return PAGE_SIZES[0]
    finally:
        trial.unlink(missing_ok=True)
