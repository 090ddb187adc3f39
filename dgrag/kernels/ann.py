"""Approximate nearest neighbours over unit vectors: an HNSW graph (faiss-cpu, the optional `ann`
extra, imported on first use), for the fact route past a few hundred thousand vectors.

The index keeps 8-bit copies of the vectors (faiss's SQ8: a quarter of float32's bytes) and only
finds candidates: `search_rescored` scores them again with the float32 vectors the caller holds,
so a fact it finds has exactly the cosine exact search gives it, and the only difference from
exact search is a fact it misses. No SQL, no models: the store keeps the serialized bytes.

faiss-cpu rather than usearch (both measured by bench/scale.py on the same vectors, HNSW with
M=16, ef_construction=128 and 8-bit storage; docs/benchmarks.md, "Fact search at a million
vectors"): at 100k vectors and the same recall@100 of exact, faiss answered in half the CPU
time (2.6 against 5.6 ms at breadth 400) and built in half (65 against ~130 CPU s), the
index the same size (53 MB). Its search is thread-safe and takes its breadth per call
(SearchParametersHNSW), so requests with different breadths never share a setting.

Rows that repeat another exactly (facts of one text share its vector: 135,306 of the tenfold
corpus's 369,662) are folded before the build (`knn.fold_equal_rows`): the index holds each
vector once, and a candidate stands for every row equal to it. Built over every row, the twins' cliques cut the
graph's reach: recall@100 of exact at the default breadth was 0.940 on that corpus's own vectors
(0.951 counting a twin for a twin; some questions had none of their top 100), against 0.980
folded, which also builds 1.5x faster (docs/benchmarks.md).
"""
from __future__ import annotations

import contextlib
import hashlib
import os

import numpy as np

from .knn import topk

LIBRARY = "faiss-cpu"
CONNECTIVITY = 16       # HNSW's M: neighbours per node and layer (32 on the base layer)
EXPANSION_ADD = 128     # the build's search breadth (efConstruction): wider builds slower, finds better
STORAGE = "SQ8"         # the vectors inside the index: 8 bits a component, per-dimension ranges
FINGERPRINT_COMPONENTS = 8  # leading components of each vector hashed into the fingerprint


def _faiss():
    """The library; ImportError without the `ann` extra."""
    import faiss

    return faiss


def available() -> bool:
    try:
        _faiss()
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def _omp_threads(faiss, threads: int):
    """faiss's own OpenMP thread count for one build, given back after (it is the calling
    thread's setting, and faiss carries its own OpenMP runtime)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads) or os.cpu_count() or 1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def build(vectors: np.ndarray, threads: int = 0):
    """An HNSW index of the rows of `vectors` (unit float32, n x d), its ids the row positions.
    `threads`: 0 = every core."""
    faiss = _faiss()
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    index = faiss.index_factory(int(vectors.shape[1]), f"HNSW{CONNECTIVITY},{STORAGE}", faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EXPANSION_ADD
    if vectors.shape[0]:
        with _omp_threads(faiss, threads):
            index.train(vectors)  # SQ8's per-dimension ranges: one pass over the vectors
            index.add(vectors)
    return index


def size(index) -> int:
    """Vectors in the index."""
    return int(index.ntotal)


def search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row positions (n_queries x k, -1 where fewer were found) and approximate cosines of the
    k nearest rows of each query; k is also the walk's breadth (efSearch), given per call."""
    faiss = _faiss()
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    if k <= 0 or index.ntotal == 0:
        return np.full((queries.shape[0], max(k, 0)), -1, np.int64), np.zeros((queries.shape[0], max(k, 0)), np.float32)
    sims, ids = index.search(queries, int(k), params=faiss.SearchParametersHNSW(efSearch=int(k)))
    return ids.astype(np.int64, copy=False), np.where(ids >= 0, sims, 0.0).astype(np.float32, copy=False)


def search_rescored(index, vectors: np.ndarray, query: np.ndarray, k: int, breadth: int,
                    folded: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k best of the index's `breadth` candidates for one query, by their exact cosine over
    `vectors` (the float32 rows the index was built from), best first: what exact search
    returns, less the facts the walk did not reach. `folded`: `knn.fold_equal_rows`'s (indptr, members) where
    the index holds each distinct row once; a candidate then brings every row equal to it."""
    ids, _ = search(index, query, max(breadth, k))
    cand = ids[0][ids[0] >= 0]
    if folded is not None:
        indptr, members = folded
        counts = indptr[cand + 1] - indptr[cand]
        starts = np.repeat(indptr[cand] - np.cumsum(counts) + counts, counts)
        cand = members[starts + np.arange(int(counts.sum()))]
    cand.sort()  # row order, as exact search sees them, so ties fall the same way
    pos, vals = topk(vectors[cand] @ np.asarray(query, dtype=vectors.dtype), k)
    return cand[pos], vals


def serialize(index) -> memoryview:
    """The index as bytes (a view of faiss's buffer: a million facts' index is ~0.5 GB)."""
    return memoryview(_faiss().serialize_index(index))


def deserialize(blob: bytes | bytearray | memoryview):
    """An index from serialize()'s bytes (faiss copies them: the buffer may be let go)."""
    return _faiss().deserialize_index(np.frombuffer(blob, dtype=np.uint8))


def describe(index) -> str:
    """The library, its version and the index's parameters, in one line (stored with it)."""
    faiss = _faiss()
    return (f"faiss-cpu {faiss.__version__} HNSW{index.hnsw.nb_neighbors(1)},{STORAGE} "
            f"ef_construction={index.hnsw.efConstruction}")


def fingerprint(rowids: np.ndarray, vectors: np.ndarray) -> str:
    """What a stored index must match to be used: the rowids in row order (a fact added, deleted
    or moved changes them) and each vector's leading components (a rowid reused for another
    fact, or the file's vectors requantised, changes those). Hashes 40 bytes a vector rather
    than all 1,536: ~40 MB at a million facts, a few tens of milliseconds."""
    vectors = np.asarray(vectors)
    ids = np.ascontiguousarray(rowids, dtype="<i8")
    head = np.ascontiguousarray(vectors[:, :FINGERPRINT_COMPONENTS], dtype="<f4")
    h = hashlib.sha256(f"{ids.shape[0]}x{vectors.shape[1] if vectors.ndim == 2 else 0}".encode())
    h.update(ids.tobytes())
    h.update(head.tobytes())
    return h.hexdigest()
