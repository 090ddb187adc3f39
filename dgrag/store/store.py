"""The one SQLite index file: a connection, its write lock, and the tables grouped by what
they hold. All SQL of dgrag lives in this package."""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Iterator

from ..errors import EmbeddingMismatch, IndexFileError
from . import ann, edges, images, logs, meta, nodes, semantic, vectors
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
    `semantic` (entities, facts), `logs` (ingest and enrichment logs, the LLM cache) and `ann`
    (the stored approximate-nearest-neighbour indexes). What
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
        for module in (meta, nodes, edges, images, vectors, semantic, logs, ann):
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

    def copy_to(self, dest: Path | str, compact: bool = True, int8: bool = False) -> None:
        """A consistent single-file copy (VACUUM INTO), safe while others read and write. A
        compact copy (the default) then has its vector tables rewritten in chunks fitted to what
        they hold (as int8 with `int8`), and is vacuumed again: the smallest file that opens the same."""
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
        wrote it, and where its documents came from."""
        m = meta.items(self.con)
        dim = m.get("embedding_dim")
        return {"embedding_model": m.get("embedding_model"), "embedding_dim": int(dim) if dim else None,
                "schema_version": applied_version(self.con), "dgrag_version": m.get("dgrag_version"),
                "docs_root": m.get("docs_root"), "url_template": m.get("url_template") or None}

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


def compact_file(path: Path | str, int8: bool = False) -> dict[str, int]:
    """Rewrite a file's vector tables compactly, then VACUUM it. Not a graph change: the graph
    version (and so the persisted graph snapshot) stays. Returns the vectors rewritten per type."""
    con = open_connection(Path(path))
    try:
        migrate(con)
        con.execute("BEGIN IMMEDIATE")
        try:
            out = vectors.compact(con, int8)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        con.execute("VACUUM")
        # as VACUUM INTO leaves a copy: a rollback journal, so a read-only folder serves it alone
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()
    return out
