"""Exact k-nearest-neighbour search over normalised vectors (blocked matmul), and rows that
repeat another exactly (`fold_equal_rows`: facts of one text share one vector)."""
from __future__ import annotations

import numpy as np

FOLD_COMPONENTS = 16  # leading components hashed to find equal rows (each match then checked whole)
FOLD_BLOCK = 16_384  # rows compared at a time
_FOLD_MULTIPLIERS = np.random.default_rng(20261203).integers(1, 2**62, FOLD_COMPONENTS, dtype=np.int64) | 1


def topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the k largest entries of a 1-D array, best first."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, scores.dtype)
    idx = np.argpartition(-scores, k - 1)[:k]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return idx, scores[idx]


def knn_pairs(queries: np.ndarray, base: np.ndarray, k: int, threshold: float,
              query_ids: np.ndarray, base_ids: np.ndarray, block: int = 1024
              ) -> list[tuple[int, int, float]]:
    """(query id, base id, cosine) for each query's k nearest base rows at >= threshold,
    skipping a row matched with itself."""
    out: list[tuple[int, int, float]] = []
    k = min(k + 1, base.shape[0])  # +1: the query itself is usually in the base
    for start in range(0, queries.shape[0], block):
        sims = queries[start:start + block] @ base.T
        if k < sims.shape[1]:
            part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            part = np.tile(np.arange(sims.shape[1]), (sims.shape[0], 1))
        for row, cols in enumerate(part):
            qid = int(query_ids[start + row])
            for c in cols:
                s = float(sims[row, c])
                bid = int(base_ids[c])
                if s >= threshold and bid != qid:
                    out.append((qid, bid, s))
    return out


def random_pair_similarity(vectors: np.ndarray, n_pairs: int = 4000, seed: int = 0) -> np.ndarray:
    """Cosines of random distinct pairs: the embedder's background level of similarity."""
    n = vectors.shape[0]
    if n < 2:
        return np.zeros(0, np.float32)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, n_pairs)
    b = rng.integers(0, n, n_pairs)
    keep = a != b
    return np.einsum("ij,ij->i", vectors[a[keep]], vectors[b[keep]])


def fold_equal_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows equal to an earlier row, folded onto it: `keep`, the positions of the first row of
    each distinct vector (row order), and for distinct vector i its rows
    `members[indptr[i]:indptr[i + 1]]` (ascending, itself first). A row is folded only onto a row
    it equals in every component; a hash collision keeps its own place."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = vectors.shape[0]
    if n == 0:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(1, np.int64), empty
    lead = vectors[:, :FOLD_COMPONENTS]
    head = np.ascontiguousarray(lead).view(np.int32).astype(np.int64) @ _FOLD_MULTIPLIERS[:lead.shape[1]]
    _, first, inverse = np.unique(head, return_index=True, return_inverse=True)
    rep = first[inverse.ravel()]  # the first row with the same hash
    rows = np.arange(n)
    folded = np.flatnonzero(rep != rows)
    for a in range(0, folded.size, FOLD_BLOCK):  # in blocks: a million rows' copy would be 1.5 GB
        part = folded[a:a + FOLD_BLOCK]
        differ = part[~np.all(vectors[part] == vectors[rep[part]], axis=1)]
        rep[differ] = differ
    keep = np.flatnonzero(rep == rows)
    owner = np.searchsorted(keep, rep)
    members = np.argsort(owner, kind="stable")
    indptr = np.searchsorted(owner[members], np.arange(keep.size + 1))
    return keep, indptr.astype(np.int64), members.astype(np.int64)
