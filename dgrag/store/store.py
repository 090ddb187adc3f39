"""The one SQLite index file. All SQL of dgrag lives in this package."""
from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..errors import EmbeddingMismatch, IndexFileError
from .connect import migrate, now, open_connection
from .semantic import SemanticMixin

NODE_TYPES = ("file", "chunk", "code", "table", "image", "entity")
VECTOR_TYPES = NODE_TYPES + ("fact",)
# entity names alone, for synonymy edges: "name: description" vectors of entities described by
# one shared sentence are near-identical whatever the names say
NAME_VECTORS = "entity_name"
NODE_COLUMNS = (
    "id", "type", "text", "summary", "summary_source", "breadcrumb", "source_path",
    "line_start", "line_end", "source_url", "language", "content_hash", "meta",
)


class Store(SemanticMixin):
    """A handle on one index file. One writer at a time (a lock), many readers (WAL)."""

    def __init__(self, path: Path | str, *, readonly: bool = False, timeout: float = 30.0):
        self.path = Path(path)
        self.readonly = readonly
        self.con = open_connection(self.path, readonly=readonly, timeout=timeout)
        self.write_lock = threading.RLock()
        if readonly:
            from .connect import applied_version, latest_version

            if applied_version(self.con) > latest_version():
                migrate(self.con)  # raises SchemaTooNew with its message
        else:
            try:
                migrate(self.con)
            except IndexFileError:
                self.con.close()
                raise

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

    def copy_to(self, dest: Path | str) -> None:
        """A consistent single-file copy (VACUUM INTO), safe while others read and write."""
        with self.write_lock:
            self.con.execute("VACUUM INTO ?", (str(dest),))

    # ---- the persisted graph snapshot ------------------------------------------------------
    def graph_version(self) -> int:
        return int(self.get_meta("graph_version", "0"))

    def read_graph_cache(self, version: int) -> bytes | None:
        if not self.con.execute("SELECT 1 FROM sqlite_master WHERE name='graph_cache'").fetchone():
            return None  # a file from before migration 0003, opened read-only
        row = self.con.execute("SELECT data FROM graph_cache WHERE id=1 AND version=?", (version,)).fetchone()
        return bytes(row[0]) if row else None

    def write_graph_cache(self, version: int, data: bytes) -> bool:
        """Store the snapshot if the graph is still at `version` (no version bump: it is a cache)."""
        with self.write_lock:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                if self.graph_version() != version:
                    return False
                self.con.execute("INSERT OR REPLACE INTO graph_cache(id, version, data) VALUES (1, ?, ?)",
                                 (version, data))
            finally:
                self.con.execute("COMMIT")
        return True

    # ---- meta -------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.con.execute(
            "INSERT INTO meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, str(value)),
        )

    def all_meta(self) -> dict[str, str]:
        return dict(self.con.execute("SELECT key, value FROM meta").fetchall())

    def bind_embedder(self, model_id: str, dim: int) -> None:
        """Record the embedder on a new index; refuse a file built with another one."""
        if self.get_meta("embedding_model") is None:
            with self.transaction():
                self.set_meta("embedding_model", model_id)
                self.set_meta("embedding_dim", str(dim))
                self._create_vector_tables(dim)
            return
        self.check_embedder(model_id, dim)
        if not self.con.execute(f"SELECT 1 FROM sqlite_master WHERE name='vec_{NAME_VECTORS}'").fetchone():
            with self.transaction():
                self._create_vector_tables(dim)  # a file from before the name vectors existed

    def check_embedder(self, model_id: str, dim: int) -> None:
        have_model, have_dim = self.get_meta("embedding_model"), self.get_meta("embedding_dim")
        if have_model is None:
            return
        if have_model != model_id or int(have_dim or 0) != dim:
            raise EmbeddingMismatch(
                f"{self.path} was built with embedding model {have_model!r} (dim {have_dim}); "
                f"the configured embedder is {model_id!r} (dim {dim}). Configure the same "
                "embedder (DGRAG_EMBEDDER) or rebuild the index into a new file."
            )

    def _create_vector_tables(self, dim: int) -> None:
        for t in VECTOR_TYPES + (NAME_VECTORS,):
            self.con.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{t} USING vec0("
                f"embedding float[{int(dim)}] distance_metric=cosine)"
            )

    # ---- ingest log ---------------------------------------------------------------
    def file_log(self) -> dict[str, tuple[str | None, str]]:
        rows = self.con.execute("SELECT path, content_hash, status FROM files").fetchall()
        return {p: (h, s) for p, h, s in rows}

    def log_file(self, path: str, content_hash: str | None, status: str, reason: str = "", nodes: int = 0) -> None:
        self.con.execute(
            "INSERT INTO files(path, content_hash, status, reason, nodes, updated_at) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(path) DO UPDATE SET content_hash=excluded.content_hash, status=excluded.status, "
            "reason=excluded.reason, nodes=excluded.nodes, updated_at=excluded.updated_at",
            (path, content_hash, status, reason, nodes, now()),
        )

    def forget_file(self, path: str) -> None:
        self.con.execute("DELETE FROM files WHERE path=?", (path,))

    def skipped_files(self) -> list[tuple[str, str]]:
        return self.con.execute(
            "SELECT path, reason FROM files WHERE status='skipped' ORDER BY path"
        ).fetchall()

    # ---- nodes --------------------------------------------------------------------
    def nodes_of_file(self, path: str) -> dict[str, tuple[int, str | None]]:
        """id -> (rowid, content_hash) of the structural nodes a page owns."""
        rows = self.con.execute(
            "SELECT id, rowid, content_hash FROM nodes WHERE source_path=? AND type != 'image' AND type != 'entity'",
            (path,),
        ).fetchall()
        return {i: (r, h) for i, r, h in rows}

    def rowids_of(self, ids: Iterable[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        ids = list(ids)
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            q = "SELECT id, rowid FROM nodes WHERE id IN (%s)" % ",".join("?" * len(part))
            out.update(self.con.execute(q, part).fetchall())
        return out

    def insert_node(self, node: dict) -> int:
        values = [node.get(c) for c in NODE_COLUMNS]
        values[NODE_COLUMNS.index("meta")] = json.dumps(node.get("meta") or {}, ensure_ascii=False)
        cur = self.con.execute(
            "INSERT INTO nodes(%s) VALUES (%s)" % (",".join(NODE_COLUMNS), ",".join("?" * len(NODE_COLUMNS))),
            values,
        )
        return int(cur.lastrowid)

    def update_node_position(self, rowid: int, node: dict) -> None:
        """An unchanged node moved inside its page: new lines / URL / breadcrumb, same vector."""
        self.con.execute(
            "UPDATE nodes SET line_start=?, line_end=?, source_url=?, breadcrumb=?, meta=? WHERE rowid=?",
            (node.get("line_start"), node.get("line_end"), node.get("source_url"), node.get("breadcrumb", ""),
             json.dumps(node.get("meta") or {}, ensure_ascii=False), rowid),
        )

    def update_node(self, rowid: int, node: dict) -> None:
        """Replace a node's content in place (same id, same rowid): its vector is recomputed."""
        cols = [c for c in NODE_COLUMNS if c not in ("id", "type")]
        values = [node.get(c) for c in cols]
        values[cols.index("meta")] = json.dumps(node.get("meta") or {}, ensure_ascii=False)
        self.con.execute(
            "UPDATE nodes SET %s, embed_hash=NULL WHERE rowid=?" % ", ".join(f"{c}=?" for c in cols),
            values + [rowid],
        )

    def image_node_by_sha(self, sha: str) -> int | None:
        row = self.con.execute(
            "SELECT rowid FROM nodes WHERE type='image' AND content_hash=?", (sha,)).fetchone()
        return row[0] if row else None

    def redirect_node(self, old: int, new: int) -> None:
        """Move every edge of `old` onto `new`, then delete `old` (near-duplicate merge)."""
        self.con.execute("UPDATE OR IGNORE edges SET dst=? WHERE dst=?", (new, old))
        self.con.execute("UPDATE OR IGNORE edges SET src=? WHERE src=?", (new, old))
        self.delete_nodes([old])

    def set_image_node_sha(self, rowid: int, sha: str, width: int, height: int) -> None:
        meta = json.loads(self.con.execute("SELECT meta FROM nodes WHERE rowid=?", (rowid,)).fetchone()[0])
        meta.update(sha=sha, width=width, height=height)
        self.con.execute("UPDATE nodes SET content_hash=?, meta=? WHERE rowid=?",
                         (sha, json.dumps(meta, ensure_ascii=False), rowid))

    def merged_image_count(self) -> int:
        return self.con.execute("SELECT count(*) FROM images WHERE representative IS NOT NULL").fetchone()[0]

    def delete_nodes(self, rowids: Sequence[int]) -> None:
        """Nodes with their edges, links and vectors."""
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            marks = ",".join("?" * len(part))
            types = dict(self.con.execute(
                f"SELECT rowid, type FROM nodes WHERE rowid IN ({marks})", part).fetchall())
            self.con.execute(f"DELETE FROM edges WHERE src IN ({marks})", part)
            self.con.execute(f"DELETE FROM edges WHERE dst IN ({marks})", part)
            self.con.execute(f"DELETE FROM links WHERE src IN ({marks})", part)
            self._delete_vectors_of(types)
            self.delete_semantics_of_nodes(part)
            self.con.execute(f"DELETE FROM nodes WHERE rowid IN ({marks})", part)

    def _delete_vectors_of(self, types: dict[int, str]) -> None:
        if self.get_meta("embedding_dim") is None:
            return
        for rowid, t in types.items():
            self.con.execute(f"DELETE FROM vec_{t} WHERE rowid=?", (rowid,))
            if t == "entity":
                self.con.execute(f"DELETE FROM vec_{NAME_VECTORS} WHERE rowid=?", (rowid,))

    def node_by_id(self, node_id: str) -> dict | None:
        rows = self.nodes_by_rowids(self.rowids_of([node_id]).values())
        return rows[0] if rows else None

    def nodes_by_rowids(self, rowids: Iterable[int]) -> list[dict]:
        rowids = list(rowids)
        out = {}
        cols = "rowid, " + ",".join(NODE_COLUMNS)
        for i in range(0, len(rowids), 500):
            part = rowids[i:i + 500]
            q = f"SELECT {cols} FROM nodes WHERE rowid IN ({','.join('?' * len(part))})"
            for row in self.con.execute(q, part):
                d = dict(zip(("rowid",) + NODE_COLUMNS, row))
                d["meta"] = json.loads(d["meta"] or "{}")
                out[d["rowid"]] = d
        return [out[r] for r in rowids if r in out]

    def set_summary(self, rowid: int, summary: str, source: str) -> None:
        """A new summary changes what gets embedded: the vector is recomputed."""
        self.con.execute(
            "UPDATE nodes SET summary=?, summary_source=?, embed_hash=NULL WHERE rowid=?",
            (summary, source, rowid),
        )

    def image_node_rowids_unreferenced(self) -> list[int]:
        rows = self.con.execute(
            "SELECT rowid FROM nodes WHERE type='image' AND rowid NOT IN "
            "(SELECT dst FROM edges WHERE type='contains')"
        ).fetchall()
        return [r[0] for r in rows]

    # ---- edges and links ------------------------------------------------------------
    def add_edges(self, edges: Iterable[tuple[int, int, str, float]]) -> None:
        self.con.executemany(
            "INSERT INTO edges(src, dst, type, weight) VALUES (?,?,?,?) "
            "ON CONFLICT(src, dst, type) DO UPDATE SET weight=excluded.weight",
            edges,
        )

    def delete_edges_from(self, rowids: Sequence[int], types: Sequence[str]) -> None:
        tmarks = ",".join("?" * len(types))
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            self.con.execute(
                f"DELETE FROM edges WHERE src IN ({','.join('?' * len(part))}) AND type IN ({tmarks})",
                part + list(types),
            )

    def replace_links(self, rowids: Sequence[int], links: Iterable[tuple[int, str, str]]) -> None:
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            self.con.execute(f"DELETE FROM links WHERE src IN ({','.join('?' * len(part))})", part)
        self.con.executemany(
            "INSERT OR IGNORE INTO links(src, target_path, anchor) VALUES (?,?,?)", links)

    def rebuild_jump_edges(self) -> int:
        """jump edges chunk -> file for every link whose target page is indexed."""
        self.con.execute("DELETE FROM edges WHERE type='jump'")
        self.con.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type, weight) "
            "SELECT DISTINCT l.src, n.rowid, 'jump', 1.0 FROM links l "
            "JOIN nodes n ON n.type='file' AND n.source_path=l.target_path WHERE l.src != n.rowid"
        )
        return self.con.execute("SELECT count(*) FROM edges WHERE type='jump'").fetchone()[0]

    def unresolved_links(self) -> list[tuple[str, str]]:
        return self.con.execute(
            "SELECT DISTINCT s.source_path, l.target_path FROM links l JOIN nodes s ON s.rowid=l.src "
            "WHERE l.target_path NOT IN (SELECT path FROM files WHERE status='ok') ORDER BY 1, 2"
        ).fetchall()

    # ---- images ---------------------------------------------------------------------
    def image_hashes(self) -> list[tuple[str, str, str, int, int]]:
        """(sha256, dhash, phash, width, height) of every representative image."""
        return self.con.execute(
            "SELECT sha256, dhash, phash, width, height FROM images WHERE representative IS NULL"
        ).fetchall()

    def image_representative(self, sha: str) -> str | None:
        row = self.con.execute("SELECT coalesce(representative, sha256) FROM images WHERE sha256=?", (sha,)).fetchone()
        return row[0] if row else None

    def put_image(self, sha: str, data: bytes, fmt: str, width: int, height: int, dhash: str, phash: str) -> None:
        self.con.execute(
            "INSERT OR IGNORE INTO images(sha256, data, format, width, height, dhash, phash) VALUES (?,?,?,?,?,?,?)",
            (sha, data, fmt, width, height, dhash, phash),
        )

    def merge_image(self, duplicate: str, representative: str) -> None:
        """Point a near-duplicate (and whatever pointed at it) at its representative."""
        self.con.execute(
            "UPDATE images SET representative=? WHERE sha256=? OR representative=?",
            (representative, duplicate, duplicate),
        )
        self.con.execute("UPDATE images SET representative=NULL WHERE sha256=?", (representative,))

    def image_bytes(self, sha: str) -> tuple[bytes, str] | None:
        row = self.con.execute(
            "SELECT data, format FROM images WHERE sha256=(SELECT coalesce(representative, sha256) "
            "FROM images WHERE sha256=?)", (sha,)).fetchone()
        return (bytes(row[0]), row[1]) if row else None

    def drop_unused_images(self) -> int:
        """Blobs that no image node shows any more (an image node's content_hash is its blob)."""
        dead = [s for (s,) in self.con.execute(
            "SELECT sha256 FROM images WHERE representative IS NULL AND sha256 NOT IN "
            "(SELECT content_hash FROM nodes WHERE type='image')")]
        for s in dead:
            self.con.execute("DELETE FROM images WHERE sha256=? OR representative=?", (s, s))
        return len(dead)

    # ---- vectors --------------------------------------------------------------------
    def pending_embeddings(self, limit: int = 1_000_000) -> list[tuple[int, str, dict]]:
        """Nodes whose vector is missing or stale: (rowid, type, row)."""
        rowids = [r for (r,) in self.con.execute(
            "SELECT rowid FROM nodes WHERE embed_hash IS NULL ORDER BY rowid LIMIT ?", (limit,))]
        return [(n["rowid"], n["type"], n) for n in self.nodes_by_rowids(rowids)]

    def put_vectors(self, kind: str, rowids: Sequence[int], vectors: np.ndarray, hashes: Sequence[str]) -> None:
        table = f"vec_{kind}"
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        for rowid, vec, h in zip(rowids, vectors, hashes):
            self.con.execute(f"DELETE FROM {table} WHERE rowid=?", (int(rowid),))
            self.con.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (?,?)", (int(rowid), vec.tobytes()))
            if kind != "fact":
                self.con.execute("UPDATE nodes SET embed_hash=? WHERE rowid=?", (h, int(rowid)))

    def vectors_by_embed_hash(self, kind: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """Vectors already computed for the same text (content-addressed reuse)."""
        out: dict[str, bytes] = {}
        hashes = list(set(hashes))
        for i in range(0, len(hashes), 500):
            part = hashes[i:i + 500]
            q = (f"SELECT n.embed_hash, v.embedding FROM nodes n JOIN vec_{kind} v ON v.rowid = n.rowid "
                 f"WHERE n.embed_hash IN ({','.join('?' * len(part))})")
            out.update(self.con.execute(q, part).fetchall())
        return out

    def put_vectors_bulk(self, kind: str, rowids: Sequence[int], vectors: np.ndarray) -> None:
        """Many vectors in one statement batch (synthetic indexes, imports)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.con.executemany(f"INSERT INTO vec_{kind}(rowid, embedding) VALUES (?, ?)",
                             ((int(r), v.tobytes()) for r, v in zip(rowids, vectors)))

    def insert_nodes_bulk(self, rows: Iterable[tuple]) -> None:
        """(rowid, id, type, text, breadcrumb, source_path, embed_hash) rows, for synthetic indexes."""
        self.con.executemany(
            "INSERT INTO nodes(rowid, id, type, text, breadcrumb, source_path, embed_hash) VALUES (?,?,?,?,?,?,?)",
            rows)

    def knn(self, kind: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the k nearest vectors of one type."""
        if k <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).tobytes()
        rows = self.con.execute(
            f"SELECT rowid, distance FROM vec_{kind} WHERE embedding MATCH ? AND k = ?", (q, int(k))
        ).fetchall()
        return [(int(r), 1.0 - float(d)) for r, d in rows]

    def all_vectors(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, matrix) of one vector table, for in-memory search and graph kernels."""
        dim = int(self.get_meta("embedding_dim") or 0)
        try:
            return self._vectors_from_shadow(kind, dim)
        except Exception:  # noqa: BLE001 - another sqlite-vec layout: take the slow, public path
            pass
        rows = self.con.execute(f"SELECT rowid, embedding FROM vec_{kind}").fetchall()
        ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        mat = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32).reshape(len(rows), dim)
        return ids, mat

    def _vectors_from_shadow(self, kind: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Read vec0's shadow tables chunk by chunk (sqlite-vec 0.1.x): ~50x faster than
        scanning the virtual table row by row, which dominated start-up."""
        rows = self.con.execute(f"SELECT rowid, chunk_id, chunk_offset FROM vec_{kind}_rowids").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
        mat = np.empty((arr.shape[0], dim), dtype=np.float32)
        by_chunk = np.argsort(arr[:, 1], kind="stable")  # rows grouped by storage chunk, found by bisection
        chunk_of = arr[by_chunk, 1]
        for chunk_id, blob in self.con.execute(f"SELECT rowid, vectors FROM vec_{kind}_vector_chunks00"):
            sel = by_chunk[np.searchsorted(chunk_of, chunk_id, "left"):np.searchsorted(chunk_of, chunk_id, "right")]
            if sel.size:
                block = np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
                mat[sel] = block[arr[sel, 2]]
        return arr[:, 0].copy(), mat

    # ---- bulk reads for the in-memory graph ---------------------------------------------
    def node_table(self, codes: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """(rowids ascending, type code per node); the coding happens in SQL."""
        case = " ".join(f"WHEN '{t}' THEN {int(c)}" for t, c in codes.items())
        rows = self.con.execute(f"SELECT rowid, CASE type {case} ELSE 255 END FROM nodes ORDER BY rowid").fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].astype(np.uint8)

    def edge_table(self, codes: dict[str, int], other: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(src rowids, dst rowids, type code, weight) of every edge, as arrays."""
        case = " ".join(f"WHEN '{t}' THEN {int(c)}" for t, c in codes.items())
        rows = self.con.execute(f"SELECT src, dst, CASE type {case} ELSE {int(other)} END, weight FROM edges").fetchall()
        arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
        return (arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2].astype(np.uint8),
                arr[:, 3].astype(np.float32))

    # ---- stats ----------------------------------------------------------------------
    def describe(self) -> dict:
        """What the file is: its embedding model and dimension, schema version, the dgrag
        version that last wrote it, and where its documents came from."""
        from .connect import applied_version

        meta = self.all_meta()
        dim = meta.get("embedding_dim")
        return {"embedding_model": meta.get("embedding_model"), "embedding_dim": int(dim) if dim else None,
                "schema_version": applied_version(self.con), "dgrag_version": meta.get("dgrag_version"),
                "docs_root": meta.get("docs_root"), "url_template": meta.get("url_template") or None}

    def stats(self) -> dict:
        nodes = dict.fromkeys(NODE_TYPES, 0)
        nodes.update(self.con.execute("SELECT type, count(*) FROM nodes GROUP BY type").fetchall())
        edges = dict(self.con.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY type").fetchall())
        vectors = {}
        if self.get_meta("embedding_dim") is not None:
            for t in VECTOR_TYPES:
                vectors[t] = self.con.execute(f"SELECT count(*) FROM vec_{t}").fetchone()[0]
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {"index": self.describe(), "nodes": nodes, "edges": edges, "vectors": vectors, "size_bytes": size}

    def integrity_check(self) -> str:
        return self.con.execute("PRAGMA integrity_check").fetchone()[0]
