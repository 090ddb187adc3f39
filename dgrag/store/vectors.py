"""The vector tables: one sqlite-vec `vec_<type>` per node type, `vec_fact`, and
`vec_entity_name` (entity names alone, for synonymy edges). Functions over one connection."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import meta

NODE_TYPES = ("file", "chunk", "code", "table", "image", "entity")
VECTOR_TYPES = NODE_TYPES + ("fact",)
# entity names alone, for synonymy edges: "name: description" vectors of entities described by
# one shared sentence are near-identical whatever the names say
NAME_VECTORS = "entity_name"

__all__ = ["create_tables", "exist", "put", "by_embed_hash", "put_bulk", "knn", "matrix", "delete_of_nodes",
           "delete_facts", "counts"]


def create_tables(con, dim: int) -> None:
    for t in VECTOR_TYPES + (NAME_VECTORS,):
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{t} USING vec0("
                    f"embedding float[{int(dim)}] distance_metric=cosine)")


def exist(con) -> bool:
    """Vector tables exist once an embedder is bound (a vec0 table fixes its dimension)."""
    return meta.get(con, "embedding_dim") is not None


def put(con, kind: str, rowids: Sequence[int], vectors: np.ndarray, hashes: Sequence[str]) -> None:
    """Replace the vectors of `rowids`; a node records the hash of the text it embeds."""
    table = f"vec_{kind}"
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    for rowid, vec, h in zip(rowids, vectors, hashes):
        con.execute(f"DELETE FROM {table} WHERE rowid=?", (int(rowid),))
        con.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (?,?)", (int(rowid), vec.tobytes()))
        if kind != "fact":
            con.execute("UPDATE nodes SET embed_hash=? WHERE rowid=?", (h, int(rowid)))


def by_embed_hash(con, kind: str, hashes: Sequence[str]) -> dict[str, bytes]:
    """Vectors already computed for the same text (content-addressed reuse)."""
    out: dict[str, bytes] = {}
    hashes = list(set(hashes))
    for i in range(0, len(hashes), 500):
        part = hashes[i:i + 500]
        q = (f"SELECT n.embed_hash, v.embedding FROM nodes n JOIN vec_{kind} v ON v.rowid = n.rowid "
             f"WHERE n.embed_hash IN ({','.join('?' * len(part))})")
        out.update(con.execute(q, part).fetchall())
    return out


def put_bulk(con, kind: str, rowids: Sequence[int], vectors: np.ndarray) -> None:
    """Many vectors in one statement batch (synthetic indexes, imports)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    con.executemany(f"INSERT INTO vec_{kind}(rowid, embedding) VALUES (?, ?)",
                    ((int(r), v.tobytes()) for r, v in zip(rowids, vectors)))


def knn(con, kind: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the k nearest vectors of one type."""
    if k <= 0:
        return []
    q = np.ascontiguousarray(query, dtype=np.float32).tobytes()
    rows = con.execute(f"SELECT rowid, distance FROM vec_{kind} WHERE embedding MATCH ? AND k = ?",
                       (q, int(k))).fetchall()
    return [(int(r), 1.0 - float(d)) for r, d in rows]


def matrix(con, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, matrix) of one vector table, for in-memory search and graph kernels."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    try:
        return _from_shadow(con, kind, dim)
    except Exception:  # noqa: BLE001 - another sqlite-vec layout: take the slow, public path
        pass
    rows = con.execute(f"SELECT rowid, embedding FROM vec_{kind}").fetchall()
    ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    mat = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32).reshape(len(rows), dim)
    return ids, mat


def _from_shadow(con, kind: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
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
            block = np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
            mat[sel] = block[arr[sel, 2]]
    return arr[:, 0].copy(), mat


def delete_of_nodes(con, types: dict[int, str]) -> None:
    """The vectors of deleted nodes (rowid -> type)."""
    if not exist(con):
        return
    for rowid, t in types.items():
        con.execute(f"DELETE FROM vec_{t} WHERE rowid=?", (rowid,))
        if t == "entity":
            con.execute(f"DELETE FROM vec_{NAME_VECTORS} WHERE rowid=?", (rowid,))


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
