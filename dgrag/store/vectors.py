"""The vector tables: one sqlite-vec `vec_<type>` per node type and `vec_fact`, each vector
stored once. Functions over one connection.

Vectors are float32 as built. `compact(int8=True)` (`dgrag snapshot`, the default) rewrites each
table as int8 (`embedding int8[dim]`) centred on its mean (`CENTRES`, below): a quarter of
float32's bytes. A compact file from before schema 8 has int8 tables scaled per row (each
vector's largest component ±127, read back divided by its norm; vec0's cosine KNN works on them
as they are); paired against float32 that scaling lost 1.4-1.5 points of MuSiQue dev R@5 and 0.6
of ArkUI-X test section R@5, the centred one at most one question (0.5 points) of any split and
metric (docs/benchmarks.md, "Index cost"). Each table is read and written in its own element type
(`storage`, `centre_of`), so every kind of file opens alike.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..kernels.knn import fold_equal_rows
from . import meta

NODE_TYPES = ("file", "chunk", "code", "table", "image", "entity")
VECTOR_TYPES = NODE_TYPES + ("fact",)
# Before schema 5, entity names had a table of their own for synonymy (`vec_entity_name`): a
# second copy of every entity vector since entities are embedded by their name alone. The
# migration folds it into vec_entity (`fold_name_vectors`).
OLD_NAME_VECTORS = "entity_name"
CHUNK_VECTORS = 1024  # vec0's default: vectors allocated at a time while a table grows
# Facts with the same text have the same vector (enrich.semantic_layer.embed_facts reuses it): a
# quarter of the ArkUI-X facts. A compact file stores it once, under one of them, and maps the
# others onto it (schema 8's `fact_vector_alias`); `matrix`, `knn`, `counts` read them as if
# each had its own.
ALIASES = "fact_vector_alias"
# int8 centred (`dgrag snapshot`, schema 8): e5-style vectors share a large common component (the
# mean of a table's vectors has norm 0.86-0.91), so each is stored as its difference from the
# table's mean, in steps of one size for the table: code = round((v - mean) / step), read back as
# code * step + mean, made unit length. The mean and step are in `vector_centre`. Paired against
# float32 it moved at most one question of a split at R@1 / R@5 / section R@5, where the per-row
# scaling (the int8 of before, still read) lost 1.4 points (docs/benchmarks.md). vec0 searches
# such a table by L2 among the codes (the distance to the vector read back, up to the step), and
# `knn` scores its hits as cosine with the vectors read back.
CENTRES = "vector_centre"
CENTRE_PERCENTILE = 99.99

__all__ = ["create_tables", "exist", "put", "by_embed_hash", "of_rowids", "put_bulk", "knn", "matrix", "delete_of_nodes",
           "delete_facts", "counts", "storage", "compact", "centre_of"]


def _ddl(kind: str, dim: int, element: str = "float", chunk_size: int = CHUNK_VECTORS,
         metric: str = "cosine") -> str:
    chunk = "" if chunk_size == CHUNK_VECTORS else f", chunk_size={int(chunk_size)}"
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{kind} USING vec0("
            f"embedding {element}[{int(dim)}] distance_metric={metric}{chunk})")


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


def centre_of(con, kind: str) -> tuple[np.ndarray, float] | None:
    """(mean vector, step) of a centred int8 table, or None (float32, or int8 scaled per row)."""
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (CENTRES,)).fetchone() is None:
        return None
    row = con.execute(f"SELECT mean, step FROM {CENTRES} WHERE kind = ?", (kind,)).fetchone()
    return (np.frombuffer(row[0], dtype=np.float32), float(row[1])) if row else None


def fit_centre(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """The mean of a table's vectors and the step that puts the 99.99th percentile of the
    residuals' components at 127 (the rare larger ones are clipped)."""
    v = np.asarray(vectors, dtype=np.float32)
    mean = v.mean(axis=0).astype(np.float32)
    peak = float(np.percentile(np.abs(v - mean), CENTRE_PERCENTILE)) if v.size else 0.0
    return mean, (peak / 127.0 if peak > 0 else 1.0)


def quantize_centred(vectors: np.ndarray, centre: tuple[np.ndarray, float]) -> np.ndarray:
    mean, step = centre
    v = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    return np.clip(np.rint((v - mean) / step), -127, 127).astype(np.int8)


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled so its largest component is ±127, rounded to int8."""
    v = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    peak = np.abs(v).max(axis=1, keepdims=True)
    scale = np.divide(127.0, peak, out=np.zeros_like(peak), where=peak > 0)
    return np.clip(np.rint(v * scale), -127, 127).astype(np.int8)


def decode(blob: bytes, dim: int, centre: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    """One stored vector as float32: 4*dim bytes are float32, dim bytes int8 (back to unit length;
    `centre` the table's, where it is centred)."""
    return _rows(blob, dim, np.float32 if len(blob) == 4 * dim else np.int8, centre)[0]


def _encode(con, kind: str, vectors: np.ndarray) -> tuple[str, list[bytes]]:
    """The SQL placeholder and the blobs for `kind`'s table."""
    if storage(con, kind) == "int8":
        centre = centre_of(con, kind)
        codes = quantize(vectors) if centre is None else quantize_centred(vectors, centre)
        return "vec_int8(?)", [r.tobytes() for r in codes]
    return "?", [r.tobytes() for r in np.ascontiguousarray(vectors, dtype=np.float32)]


def put(con, kind: str, rowids: Sequence[int], vectors: np.ndarray, hashes: Sequence[str]) -> None:
    """Replace the vectors of `rowids`; a node records the hash of the text it embeds."""
    table = f"vec_{kind}"
    mark, blobs = _encode(con, kind, vectors)
    if kind == "fact":
        _unalias(con, rowids)
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
    centre = centre_of(con, kind)
    for i in range(0, len(hashes), 500):
        part = hashes[i:i + 500]
        q = (f"SELECT n.embed_hash, v.embedding FROM nodes n JOIN vec_{kind} v ON v.rowid = n.rowid "
             f"WHERE n.embed_hash IN ({','.join('?' * len(part))})")
        out.update((h, decode(b, dim, centre)) for h, b in con.execute(q, part))
    return out


def of_rowids(con, kind: str, rowids: Sequence[int]) -> dict[int, np.ndarray]:
    """The vectors of `rowids` as float32 (a fact alias reads the vector it shares); rows
    without one are left out."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    centre = centre_of(con, kind)
    own = {int(r): int(r) for r in rowids}
    if kind == "fact" and _has_aliases(con):
        asked = list(own)
        for i in range(0, len(asked), 500):
            part = asked[i:i + 500]
            own.update(con.execute(f"SELECT fact, same_as FROM {ALIASES} WHERE fact IN "
                                   f"({','.join('?' * len(part))})", part).fetchall())
    out = {}
    for rowid, stored in own.items():
        row = con.execute(f"SELECT embedding FROM vec_{kind} WHERE rowid = ?", (stored,)).fetchone()
        if row is not None:
            out[rowid] = decode(row[0], dim, centre)
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
    query = np.asarray(query, dtype=np.float32).reshape(1, -1)
    mark, (q,) = _encode(con, kind, query)
    centre = centre_of(con, kind)
    fetch = k if centre is None else 2 * k + 8  # the query's code is clipped: a margin, then exact scores
    rows = con.execute(f"SELECT rowid, distance FROM vec_{kind} WHERE embedding MATCH {mark} AND k = ?",
                       (q, int(fetch))).fetchall()
    hits = [(int(r), 1.0 - float(d)) for r, d in rows]
    if centre is not None and hits:  # found by L2 among the codes; scored as cosine, exactly
        hits = _rescored(con, kind, [r for r, _ in hits], query[0], centre)[:k]
    if kind == "fact" and hits and _has_aliases(con):  # an alias scores as the vector it shares
        same = _aliases_of(con, [r for r, _ in hits])
        hits = sorted([(a, s) for r, s in hits for a in [r, *same.get(r, [])]], key=lambda t: -t[1])[:k]
    return hits


def matrix(con, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, float32 matrix) of one vector table, for in-memory search and graph kernels."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    dtype = np.int8 if storage(con, kind) == "int8" else np.float32
    centre = centre_of(con, kind) if dtype == np.int8 else None
    try:
        ids, mat = _from_shadow(con, kind, dim, dtype, centre)
    except Exception:  # noqa: BLE001 - another sqlite-vec layout: take the slow, public path
        pass
    else:
        return _with_aliases(con, kind, ids, mat)
    rows = con.execute(f"SELECT rowid, embedding FROM vec_{kind}").fetchall()
    ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    return _with_aliases(con, kind, ids, _rows(b"".join(v for _, v in rows), dim, dtype, centre))


def _rescored(con, kind: str, rowids: list[int], query: np.ndarray, centre) -> list[tuple[int, float]]:
    """Cosine of the query with the vectors of `rowids` as they read back, best first."""
    dim = query.size
    blobs = con.execute(f"SELECT rowid, embedding FROM vec_{kind} WHERE rowid IN ({','.join('?' * len(rowids))})",
                        rowids).fetchall()
    q = query / (np.linalg.norm(query) or 1.0)
    scored = [(int(r), float(decode(b, dim, centre) @ q)) for r, b in blobs]
    return sorted(scored, key=lambda t: -t[1])


def _has_aliases(con) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (ALIASES,)).fetchone() is not None \
        and con.execute(f"SELECT 1 FROM {ALIASES} LIMIT 1").fetchone() is not None


def _aliases_of(con, rowids: Sequence[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i in range(0, len(rowids), 500):
        part = [int(r) for r in rowids[i:i + 500]]
        for fact, same in con.execute(f"SELECT fact, same_as FROM {ALIASES} WHERE same_as IN "
                                      f"({','.join('?' * len(part))}) ORDER BY fact", part):
            out.setdefault(int(same), []).append(int(fact))
    return out


def _with_aliases(con, kind: str, ids: np.ndarray, mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fact vectors with a row for each alias too (the row of the vector it shares)."""
    if kind != "fact" or not _has_aliases(con):
        return ids, mat
    pairs = np.array(con.execute(f"SELECT fact, same_as FROM {ALIASES}").fetchall(), dtype=np.int64).reshape(-1, 2)
    order = np.argsort(ids)
    pos = np.searchsorted(ids[order], pairs[:, 1])
    ok = (pos < ids.size) & (ids[order][np.minimum(pos, max(ids.size - 1, 0))] == pairs[:, 1])
    return np.concatenate([ids, pairs[ok, 0]]), np.concatenate([mat, mat[order[pos[ok]]]])


def _unalias(con, rowids: Sequence[int]) -> None:
    """Facts that get a vector of their own are no longer aliases."""
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (ALIASES,)).fetchone() is None:
        return
    for i in range(0, len(rowids), 500):
        part = [int(r) for r in rowids[i:i + 500]]
        con.execute(f"DELETE FROM {ALIASES} WHERE fact IN ({','.join('?' * len(part))})", part)


def _rows(blob: bytes, dim: int, dtype, centre: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    if dtype == np.float32:
        return np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
    q = np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32)
    if centre is not None:
        q = q * np.float32(centre[1]) + centre[0]
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    return np.divide(q, norm, out=q, where=norm > 0)


def _from_shadow(con, kind: str, dim: int, dtype, centre=None) -> tuple[np.ndarray, np.ndarray]:
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
            mat[sel] = _rows(blob, dim, dtype, centre)[arr[sel, 2]]
    return arr[:, 0].copy(), mat


def delete_of_nodes(con, types: dict[int, str]) -> None:
    """The vectors of deleted nodes (rowid -> type)."""
    if not exist(con):
        return
    for rowid, t in types.items():
        con.execute(f"DELETE FROM vec_{t} WHERE rowid=?", (rowid,))


def delete_facts(con, rowids: Sequence[int]) -> None:
    """The vectors of deleted facts; a vector that aliases share moves to the first of them."""
    if not exist(con):
        return
    if _has_aliases(con):
        _unalias(con, rowids)
        _hand_over(con, rowids)
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        con.execute(f"DELETE FROM vec_fact WHERE rowid IN ({','.join('?' * len(part))})", part)


def _hand_over(con, rowids: Sequence[int]) -> None:
    """Before facts holding a shared vector go: it is stored again under its first alias, which
    the others now point at."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    for held, others in _aliases_of(con, rowids).items():
        blob = con.execute("SELECT embedding FROM vec_fact WHERE rowid = ?", (held,)).fetchone()
        con.execute(f"DELETE FROM {ALIASES} WHERE fact = ?", (others[0],))
        if blob is not None:
            put_bulk(con, "fact", [others[0]], decode(blob[0], dim, centre_of(con, "fact")).reshape(1, -1))
        con.execute(f"UPDATE {ALIASES} SET same_as = ? WHERE same_as = ?", (others[0], held))


def counts(con) -> dict[str, int]:
    if not exist(con):
        return {}
    out = {t: con.execute(f"SELECT count(*) FROM vec_{t}").fetchone()[0] for t in VECTOR_TYPES}
    if _has_aliases(con):
        out["fact"] += con.execute(f"SELECT count(*) FROM {ALIASES}").fetchone()[0]
    return out


def fitted_chunk(n: int) -> int:
    """A chunk size that holds `n` vectors in as few chunks of at most 1,024 as vec0 takes,
    with under 8 empty slots per chunk (vec0 wants a multiple of 8)."""
    chunks = max(1, -(-n // CHUNK_VECTORS))
    per = -(-max(n, 1) // chunks)
    return max(8, -(-per // 8) * 8)


def compact(con, int8: bool = False) -> dict[str, int]:
    """Rewrite every vector table, its chunks sized to what it holds (a type with 101 images had
    taken 1,024 slots; deleted vectors had left holes), as float32 or, with `int8`, quantised.
    Fact vectors that several facts share are stored once (`_share_vectors`). Run inside a
    transaction on the file to be shipped; returns the vectors rewritten per type (shared ones
    counted once)."""
    dim = int(meta.get(con, "embedding_dim") or 0)
    out: dict[str, int] = {}
    if not dim:
        return out
    for kind in VECTOR_TYPES:
        ids, mat = matrix(con, kind)
        if kind == "fact":
            ids, mat = _share_vectors(con, ids, mat)
        con.execute(f"DROP TABLE IF EXISTS vec_{kind}")
        centred = _set_centre(con, kind, mat if int8 else None)
        con.execute(_ddl(kind, dim, "int8" if int8 else "float", fitted_chunk(ids.size),
                         "l2" if centred else "cosine"))
        for i in range(0, ids.size, 4096):
            put_bulk(con, kind, ids[i:i + 4096], mat[i:i + 4096])
        out[kind] = int(ids.size)
    return out


def _set_centre(con, kind: str, vectors: np.ndarray | None) -> bool:
    """Record the centre an int8 table is written with (none for float32 or an empty table, or a
    file before schema 8: int8 scaled per row then). True if the table is centred."""
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (CENTRES,)).fetchone() is None:
        return False
    con.execute(f"DELETE FROM {CENTRES} WHERE kind = ?", (kind,))
    if vectors is None or not len(vectors):
        return False
    mean, step = fit_centre(vectors)
    con.execute(f"INSERT INTO {CENTRES}(kind, mean, step) VALUES (?, ?, ?)", (kind, mean.tobytes(), step))
    return True


def _share_vectors(con, ids: np.ndarray, mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Facts with identical vectors: the first (lowest rowid) keeps it, the others become its
    aliases. Returns the rowids and vectors to store. A file without the alias table (before
    schema 8) keeps them all."""
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (ALIASES,)).fetchone() is None or not ids.size:
        return ids, mat
    order = np.argsort(ids, kind="stable")
    ids, mat = ids[order], np.ascontiguousarray(mat[order])
    keep, indptr, members = fold_equal_rows(mat)
    first = np.empty(ids.size, np.int64)
    first[members] = np.repeat(keep, np.diff(indptr))  # each row's first equal row
    owner = ids[first]
    shared = owner != ids
    con.execute(f"DELETE FROM {ALIASES}")
    con.executemany(f"INSERT INTO {ALIASES}(fact, same_as) VALUES (?, ?)",
                    zip(ids[shared].tolist(), owner[shared].tolist()))
    return ids[~shared], mat[~shared]


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
