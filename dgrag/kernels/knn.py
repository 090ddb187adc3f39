"""Exact k-nearest-neighbour search over normalised vectors (blocked matmul)."""
from __future__ import annotations

import numpy as np


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
