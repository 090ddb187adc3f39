"""Personalised PageRank on an undirected weighted graph: scipy power iteration and igraph.

Both follow igraph's convention: with probability `damping` the walker follows an edge
(chosen proportionally to weight), otherwise it restarts from the reset distribution;
a walker on a node with no (positive-weight) edges restarts from the reset distribution.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, diags


def _reset_distribution(reset: np.ndarray) -> np.ndarray | None:
    r = np.asarray(reset, dtype=np.float64).ravel()
    if np.any(r < 0):
        raise ValueError("reset must be non-negative")
    total = r.sum()
    return None if total <= 0 else r / total


def ppr_scipy(A: csr_matrix, reset: np.ndarray, damping: float = 0.5,
              tol: float = 1e-8, max_iter: int = 100) -> np.ndarray:
    """PPR vector (sums to 1) by power iteration; all-zero reset gives zeros.

    `A` is the symmetric weighted adjacency (e.g. `graph_arrays.to_scipy`).
    """
    n = A.shape[0]
    r = _reset_distribution(reset)
    if r is None:
        return np.zeros(n, dtype=np.float64)
    if r.shape[0] != n:
        raise ValueError("reset must have one entry per node")
    A = csr_matrix(A, dtype=np.float64)
    deg = np.asarray(A.sum(axis=0)).ravel()  # column sums = out-weight of each node
    dangling = deg <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, deg))
    P = (A @ diags(inv)).tocsr()  # column-stochastic except dangling columns
    p = r.copy()
    for _ in range(max_iter):
        nxt = damping * (P @ p + p[dangling].sum() * r) + (1.0 - damping) * r
        done = np.abs(nxt - p).sum() < tol
        p = nxt
        if done:
            break
    return p / p.sum()


def ppr_igraph(graph: Any, reset: np.ndarray, damping: float = 0.5) -> np.ndarray:
    """igraph/prpack PPR with edge attribute "weight" (unweighted if absent); zero reset -> zeros."""
    n = graph.vcount()
    r = _reset_distribution(reset)
    if r is None:
        return np.zeros(n, dtype=np.float64)  # prpack rejects an all-zero reset
    if r.shape[0] != n:
        raise ValueError("reset must have one entry per node")
    weights = "weight" if "weight" in graph.es.attributes() else None
    pr = graph.personalized_pagerank(weights=weights, reset=r.tolist(), damping=damping,
                                     directed=False, implementation="prpack")
    return np.asarray(pr, dtype=np.float64)
