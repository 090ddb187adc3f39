"""Personalised PageRank by forward push (Andersen, Chung & Lang 2006), compiled with numba.

Same walk as `ppr.py` (follow an edge with probability `damping`, by weight; restart from
the reset distribution otherwise), but local: mass moves only from nodes whose residual
exceeds `eps` times their weighted degree, so the work follows where the reset mass is,
not the size of the graph. Every node's estimate is within `eps * wdeg(node)` of the
exact vector. A hub is pushed only when a large residual reaches it, which is what keeps
a query from touching the whole graph through its popular entities.
"""
from __future__ import annotations

import numpy as np

from .diffusion_jit import numba


def weighted_degree(indptr: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Sum of edge weights per row (CSR); computed once per loaded graph."""
    return np.add.reduceat(np.append(weight.astype(np.float64), 0.0), indptr[:-1]) * (np.diff(indptr) > 0)


def ppr_push(indptr: np.ndarray, indices: np.ndarray, weight: np.ndarray, wdeg: np.ndarray,
             reset: np.ndarray, damping: float = 0.5, eps: float = 1e-7) -> np.ndarray:
    """Approximate PPR vector for `reset` (normalised here); zeros for an all-zero reset.

    A node without edges keeps its residual (the walk can only restart from it)."""
    r = np.asarray(reset, dtype=np.float64).ravel()
    if r.shape[0] != indptr.shape[0] - 1:
        raise ValueError("reset must have one entry per node")
    if np.any(r < 0):
        raise ValueError("reset must be non-negative")
    total = r.sum()
    if total <= 0:
        return np.zeros(r.shape[0])
    if not 0 <= damping < 1 or not eps > 0:
        raise ValueError("damping must be in [0, 1) and eps above 0, or the push never ends")
    p, r = np.zeros(r.shape[0]), r / total
    run = _push_loop if numba is None else _push_jit
    # the loop spends its residual array: give it a copy, r stays the fallback below
    run(indptr, indices, weight, wdeg, r.copy(), p, float(damping), float(eps))  # float32 weights as they are
    mass = p.sum()
    # a reset spread so thin that no node reaches the threshold: the walk is its own reset
    return p / mass if mass > 0 else r


def _push_loop(indptr, indices, weight, wdeg, r, p, damping, eps):
    n = r.shape[0]
    queue = np.empty(n, np.int64)
    inq = np.zeros(n, np.bool_)
    head, size = 0, 0
    for u in range(n):
        if r[u] > eps * wdeg[u]:
            queue[size] = u
            inq[u] = True
            size += 1
    tail = size % n
    while size > 0:
        u = queue[head]
        head = (head + 1) % n
        size -= 1
        inq[u] = False
        ru, r[u] = r[u], 0.0
        if wdeg[u] <= 0:
            p[u] += ru
            continue
        p[u] += (1.0 - damping) * ru
        share = damping * ru / wdeg[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            r[v] += share * weight[e]
            if not inq[v] and r[v] > eps * wdeg[v]:
                queue[tail] = v  # a FIFO ring: each node is in it at most once
                tail = (tail + 1) % n
                inq[v] = True
                size += 1


_push_jit = numba.njit(cache=True, nogil=True)(_push_loop) if numba is not None else None


def warm_up() -> None:
    """Compile (or load from numba's cache) before the first query needs it."""
    from .graph_arrays import build_graph_arrays

    ga = build_graph_arrays(2, np.array([0]), np.array([1]), np.zeros(1, np.uint8), np.ones(1, np.float32),
                            np.zeros(2, np.uint8))  # the dtypes of a loaded graph: one compiled signature
    ppr_push(ga.indptr, ga.indices, ga.weight, weighted_degree(ga.indptr, ga.weight), np.array([1.0, 0.0]))
