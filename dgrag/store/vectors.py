"""The vector tables: one sqlite-vec `vec_<type>` per node type and `vec_fact`, each vector
stored once. Functions over one connection.

Vectors are float32 as built. `compact(int8=True)` (`dgrag snapshot --int8`) rewrites them as
int8 (`embedding int8[dim]`), each scaled on its own so that its largest component is ±127:
cosine does not see the scale, so vec0's cosine KNN works on them as they are, and a vector read
back is the int8 one divided by its norm (a unit vector again). A quarter of float32's bytes, but
not the default: paired against float32 it moved one ArkUI-X question at R@1 (-1.0 point, over
the 0.5 tolerance; docs/benchmarks.md, "Index cost"). Each table is read and written in its own element type
(`storage`), so int8 and float32 files open alike.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from . import meta

NODE_TYPES = ("file", "chunk", "code", "table", "image", "entity")
VECTOR_TYPES = NODE_TYPES + ("fact",)
# Before schema 5, entity names had a table of their own for synonymy (`vec_entity_name`): a
# second copy of every entity vector since entities are embedded by their name alone. The
# migration folds it into vec_entity (`fold_name_vectors`).
OLD_NAME_VECTORS = "entity_name"
CHUNK_VECTORS = 1024  # vec0's default: vectors allocated at a time while a table grows

__all__ = ["create_tables", "exist", "put", "by_embed_hash", "put_bulk", "knn", "matrix", "delete_of_nodes",
           "delete_facts", "counts", "storage", "compact"]


def _ddl(kind: str, dim: int, element: str = "float", chunk_size: int = CHUNK_VECTORS) -> str:
    chunk = "" if chunk_size == CHUNK_VECTORS else f", chunk_size={int(chunk_size)}"
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{kind} USING vec0("
            f"embedding {element}[{int(dim)}] distance_metric=cosine{chunk})")


def create_tables(con, dim: int) -> None:
    for t in VECTOR_TYPES:
        con.execute(_ddl(t, dim))


def exist(con) -> bool:
    """Vector tables exist once an embedder is bound (a vec0 table fixes its dimension)."""
    return meta.get(con, "embedding_dim") is not None


def storage(con, kind: str) -> str:
    """'int8' or 'float32': the element type the table was created with."""
    row = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (f"vec_{kind}",)).fetchone()
    return "int8" if row and re.search(r"\bint8\[", row[0] or "") else "float32"


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled so its largest component is ±127, rounded to int8."""
    v = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    peak = np.abs(v).max(axis=1, keepdims=True)
    scale = np.divide(127.0, peak, out=np.zeros_like(peak), where=peak > 0)
    return np.clip(np.rint(v * scale), -127, 127).astype(np.int8)


def decode(blob: bytes, dim: int) -> np.ndarray:
    """One stored vector as float32: 4*dim bytes are float32, dim bytes int8 (back to unit length)."""
    return _rows(blob, dim, np.float32 if len(blob) == 4 * dim else np.int8)[0]


def _encode(con, kind: str, vectors: np.ndarray) -> tuple[str, list[bytes]]:
    """The SQL placeholder and the blobs for `kind`'s table."""
    if storage(con, kind) == "int8":
        return "vec_int8(?)", [r.tobytes() for r in quantize(vectors)]
    return "?", [r.tobytes() for r in np.ascontiguousarray(vectors, dtype=np.float32)]


def put(con, kind: str, rowids: Sequence[int], vectors: np.ndarray, hashes: Sequence[str]) -> None:
    """Replace the vectors of `rowids`; a node records the hash of the text it embeds."""
    table = f"vec_{kind}"
    mark, blobs = _encode(con, kind, vectors)
    for rowid, blob, h in zip(rowids, blobs, hashes):
        con.execute(f"DELETE FROM {table} WHERE rowid=?", (int(rowid),))
        con.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (?, {mark})", (int(rowid), blob))
        if kind != "fact":
            con.execute("UPDATE nodes SET embed_hash=? WHERE rowid=?", (h, int(rowid)))


def by_embed_hash(con, kind: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors already computed for the same text (content-addressed reuse), as float32."""
    out: dict[str, np.ndarray] = {}
    hashes = list(set(hashes))
    dim = int(meta.get(con, "embedding_dim") or 0)
    for i in range(0, len(hashes), 500):
        part = hashes[i:i + 500]
        q = (f"SELECT n.embed_hash, v.embedding FROM nodes n JOIN vec_{kind} v ON v.rowid = n.rowid "
             f"WHERE n.embed_hash IN ({','.join('?' * len(part))})")
        out.update((h, decode(b, dim)) for h, b in con.execute(q, part))
    return out


def put_bulk(con, kind: str, rowids: Sequence[int], vectors: np.ndarray) -> None:
    """Many vectors in one statement batch (synthetic indexes, imports, compaction)."""
    mark, blobs = _encode(con, kind, vectors)
    con.executemany(f"INSERT INTO vec_{kind}(rowid, embedding) VALUES (?, {mark})",
                    ((int(r), b) for r, b in zip(rowids, blobs)))


def knn(con, kind: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the k nearest vectors of one type."""
    if k <= 0:
        return []
    mark, (q,) = _encode(con, kind, np.asarray(query, dtype=np.float32).reshape(1, -1))
    rows = con.execute(f"SELECT rowid, distance FROM vec_{kind} WHERE embedding MATCH {mark} AND k = ?",
                       (q, int(k))).fetchall()
    return [(int(r), 1.0 - float(d)) for r, d in rows]


def matrix(con, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, float32 matrix) of one vector table, for in-memory search and graph kernels."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    dtype = np.int8 if storage(con, kind) == "int8" else np.float32
    try:
        return _from_shadow(con, kind, dim, dtype)
    except Exception:  # noqa: BLE001 - another sqlite-vec layout: take the slow, public path
        pass
    rows = con.execute(f"SELECT rowid, embedding FROM vec_{kind}").fetchall()
    ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    return ids, _rows(b"".join(v for _, v in rows), dim, dtype)


def _rows(blob: bytes, dim: int, dtype) -> np.ndarray:
    if dtype == np.float32:
        return np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
    q = np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32)
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    return np.divide(q, norm, out=q, where=norm > 0)


def _from_shadow(con, kind: str, dim: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Read vec0's shadow tables chunk by chunk (sqlite-vec 0.1.x): ~50x faster than
    scanning the virtual table row by row, which dominated start-up."""
    rows = con.execute(f"SELECT rowid, chunk_id, chunk_offset FROM vec_{kind}_rowids").fetchall()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    mat = np.empty((arr.shape[0], dim), dtype=np.float32)
    by_chunk = np.argsort(arr[:, 1], kind="stable")  # rows grouped by storage chunk, found by bisection
    chunk_of = arr[by_chunk, 1]
    for chunk_id, blob in con.execute(f"SELECT rowid, vectors FROM vec_{kind}_vector_chunks00"):
        sel = by_chunk[np.searchsorted(chunk_of, chunk_id, "left"):np.searchsorted(chunk_of, chunk_id, "right")]
        if sel.size:
            mat[sel] = _rows(blob, dim, dtype)[arr[sel, 2]]
    return arr[:, 0].copy(), mat


def delete_of_nodes(con, types: dict[int, str]) -> None:
    """The vectors of deleted nodes (rowid -> type)."""
    if not exist(con):
        return
    for rowid, t in types.items():
        con.execute(f"DELETE FROM vec_{t} WHERE rowid=?", (rowid,))


def delete_facts(con, rowids: Sequence[int]) -> None:
    if not exist(con):
        return
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        con.execute(f"DELETE FROM vec_fact WHERE rowid IN ({','.join('?' * len(part))})", part)


def counts(con) -> dict[str, int]:
    if not exist(con):
        return {}
    return {t: con.execute(f"SELECT count(*) FROM vec_{t}").fetchone()[0] for t in VECTOR_TYPES}


def fitted_chunk(n: int) -> int:
    """A chunk size that holds `n` vectors in as few chunks of at most 1,024 as vec0 takes,
    with under 8 empty slots per chunk (vec0 wants a multiple of 8)."""
    chunks = max(1, -(-n // CHUNK_VECTORS))
    per = -(-max(n, 1) // chunks)
    return max(8, -(-per // 8) * 8)


def compact(con, int8: bool = False) -> dict[str, int]:
    """Rewrite every vector table, its chunks sized to what it holds (a type with 101 images had
    taken 1,024 slots; deleted vectors had left holes), as float32 or, with `int8`, quantised.
    Run inside a transaction on the file to be shipped; returns the vectors rewritten per type."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    out: dict[str, int] = {}
    if not dim:
        return out
    for kind in VECTOR_TYPES:
        ids, mat = matrix(con, kind)
        con.execute(f"DROP TABLE IF EXISTS vec_{kind}")
        con.execute(_ddl(kind, dim, "int8" if int8 else "float", fitted_chunk(ids.size)))
        for i in range(0, ids.size, 4096):
            put_bulk(con, kind, ids[i:i + 4096], mat[i:i + 4096])
        out[kind] = int(ids.size)
    return out


def fold_name_vectors(con) -> int:
    """Migration 5: entity name vectors into vec_entity, once. Since entities are embedded by
    their name (dgrag 2666c53) the two tables held the same vectors; in a file from before, the
    name vectors are the ones today's `embed_text` gives, so they replace the node vectors.
    Returns the vectors rewritten (0 when the file has no such table or they were the same)."""
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"vec_{OLD_NAME_VECTORS}",)).fetchone():
        return 0
    ids, mat = matrix(con, OLD_NAME_VECTORS)
    have_ids, have = matrix(con, "entity")
    pos = {int(r): i for i, r in enumerate(have_ids)}
    # rewrite only vectors that differ: vec0 leaves a deleted slot empty, so rewriting identical
    # ones (every entity of a file from after 2666c53) would grow the file by what the drop frees
    same = np.array([int(r) in pos and np.array_equal(have[pos[int(r)]], v) for r, v in zip(ids, mat)], bool)
    ids, mat = ids[~same], mat[~same]
    for i in range(0, ids.size, 500):
        part = [int(r) for r in ids[i:i + 500]]
        con.execute(f"DELETE FROM vec_entity WHERE rowid IN ({','.join('?' * len(part))})", part)
    for i in range(0, ids.size, 4096):
        put_bulk(con, "entity", ids[i:i + 4096], mat[i:i + 4096])
    con.execute(f"DROP TABLE vec_{OLD_NAME_VECTORS}")
    return int(ids.size)
