"""The diffusion's best-first loop compiled with numba: same algorithm, same order, same
results as `diffusion.py` (the reference, tested against this one), ~50-100x faster.

The heap lives in preallocated arrays (score, node, cost, parent, init weight); entries
compare as the reference's tuples do: higher score first, then lower node index, then cost,
parent, init weight. The loop runs in slices of `SLICE` expansions so the caller can read
the clock between slices (numba has no clock): the time budget is checked every SLICE
expansions instead of every one.
"""
from __future__ import annotations

import threading

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; the reference kernel still works
    numba = None

SLICE = 256
EXHAUSTED, MAX_EXPANSIONS, QUOTAS_FULL, PAUSED = 0, 1, 2, 3


def available() -> bool:
    return numba is not None


if numba is not None:
    @numba.njit(cache=True, inline="always")
    def _less(hs, hn, hc, hp, hw, i, j):
        if hs[i] != hs[j]:
            return hs[i] > hs[j]
        if hn[i] != hn[j]:
            return hn[i] < hn[j]
        if hc[i] != hc[j]:
            return hc[i] < hc[j]
        if hp[i] != hp[j]:
            return hp[i] < hp[j]
        return hw[i] < hw[j]

    @numba.njit(cache=True, inline="always")
    def _swap(hs, hn, hc, hp, hw, i, j):
        hs[i], hs[j] = hs[j], hs[i]
        hn[i], hn[j] = hn[j], hn[i]
        hc[i], hc[j] = hc[j], hc[i]
        hp[i], hp[j] = hp[j], hp[i]
        hw[i], hw[j] = hw[j], hw[i]

    @numba.njit(cache=True)
    def _push(h, hs, hn, hc, hp, hw, s, n, c, p, w):
        size = h[0]
        hs[size], hn[size], hc[size], hp[size], hw[size] = s, n, c, p, w
        i = size
        while i > 0:
            parent = (i - 1) >> 1
            if _less(hs, hn, hc, hp, hw, i, parent):
                _swap(hs, hn, hc, hp, hw, i, parent)
                i = parent
            else:
                break
        h[0] = size + 1

    @numba.njit(cache=True)
    def _pop(h, hs, hn, hc, hp, hw):
        top = (hs[0], hn[0], hc[0], hp[0], hw[0])
        size = h[0] - 1
        h[0] = size
        if size > 0:
            hs[0], hn[0], hc[0], hp[0], hw[0] = hs[size], hn[size], hc[size], hp[size], hw[size]
            i = 0
            while True:
                left, best = 2 * i + 1, i
                if left < size and _less(hs, hn, hc, hp, hw, left, best):
                    best = left
                if left + 1 < size and _less(hs, hn, hc, hp, hw, left + 1, best):
                    best = left + 1
                if best == i:
                    break
                _swap(hs, hn, hc, hp, hw, i, best)
                i = best
        return top

    @numba.njit(cache=True)
    def _full(counts, quotas):
        for t in range(quotas.shape[0]):
            if quotas[t] >= 0 and counts[t] < quotas[t]:
                return False
        return True

    @numba.njit(cache=True)
    def _run_slice(indptr, indices, ecost, ntype, sim, quotas, counts, h, hs, hn, hc, hp, hw, best,
                   score, cost, parent, visited, nvis, collected, ncol, max_exp, limit, max_frontier, min_score,
                   steps):
        """Up to `steps` expansions; returns a status code. State lives in the arrays."""
        done = 0
        while h[0] > 0:
            if nvis[0] >= max_exp:
                return MAX_EXPANSIONS
            if done >= steps:
                return PAUSED
            s, u, cu, pu, w = _pop(h, hs, hn, hc, hp, hw)
            if best[u] == np.inf:
                continue  # stale: finalised earlier at a better score
            done += 1
            best[u] = np.inf  # finalised: no candidate can beat +inf, one array read per neighbour
            score[u], cost[u], parent[u] = s, cu, pu
            visited[nvis[0]] = u
            nvis[0] += 1
            t = ntype[u]
            if quotas[t] >= 0 and counts[t] < quotas[t]:
                counts[t] += 1
                collected[ncol[0]] = u
                ncol[0] += 1
            if _full(counts, quotas):
                return QUOTAS_FULL
            lo = indptr[u]
            hi = min(indptr[u + 1], lo + limit)
            for e in range(lo, hi):
                v = indices[e]
                c = cu + ecost[e]
                sc = sim[v] * w / (1.0 + c)
                if sc >= min_score and sc > best[v]:
                    if h[0] >= max_frontier:
                        break
                    best[v] = sc
                    _push(h, hs, hn, hc, hp, hw, sc, v, c, u, w)
        return EXHAUSTED


def warm_up() -> None:
    """Compile (or load from numba's cache) once, before the first query needs it."""
    from .graph_arrays import build_graph_arrays

    ga = build_graph_arrays(3, np.array([0, 1]), np.array([1, 2]), np.zeros(2, np.uint8), np.ones(2, np.float32),
                            np.array([0, 1, 2], np.uint8))
    run(ga, np.ones(3), np.array([0]), np.array([1.0]), {1: 1}, max_expansions=10, per_node_neighbor_limit=4,
        max_frontier_size=10, min_enqueue_score=0.0, time_budget_s=1.0, clock=lambda: 0.0)


def run(ga, sim: np.ndarray, seed_idx: np.ndarray, seed_w: np.ndarray, quotas: dict[int, int], *,
        max_expansions: int, per_node_neighbor_limit: int, max_frontier_size: int, min_enqueue_score: float,
        time_budget_s: float, clock) -> dict:
    """The loop of `diffusion.diffuse` (seeds pushed, then best-first); returns its state."""
    n = ga.n_nodes
    cap = max_frontier_size + seed_idx.size + per_node_neighbor_limit + 1
    ws = _workspace(n, cap)
    h = np.zeros(1, np.int64)
    hs, hc, hw, hn, hp = ws["hs"], ws["hc"], ws["hw"], ws["hn"], ws["hp"]
    best, score, cost, parent = ws["best"], ws["score"], ws["cost"], ws["parent"]
    visited = np.empty(min(n, max_expansions) + 1, np.int64)
    collected = np.empty(n if not quotas else min(n, sum(quotas.values()) + 1), np.int64)
    nvis, ncol = np.zeros(1, np.int64), np.zeros(1, np.int64)
    q = np.full(256, -1, np.int64)
    for t, k in quotas.items():
        q[t] = k
    counts = np.zeros(256, np.int64)
    for s, w in zip(seed_idx.tolist(), seed_w.tolist()):  # seeds bypass the score floor and frontier cap
        sc = float(sim[s]) * w
        if sc > best[s]:
            best[s] = sc
            _push(h, hs, hn, hc, hp, hw, sc, s, 0.0, -1, w)
    status = QUOTAS_FULL if _full(counts, q) else PAUSED
    start = clock()
    while status == PAUSED:
        if clock() - start > time_budget_s:
            break
        status = _run_slice(ga.indptr, ga.indices, ga.cost, ga.node_type, sim, q, counts, h, hs, hn, hc, hp, hw, best,
                            score, cost, parent, visited, nvis, collected, ncol, max_expansions,
                            per_node_neighbor_limit, max_frontier_size, min_enqueue_score, SLICE)
    reason = {EXHAUSTED: "exhausted", MAX_EXPANSIONS: "max_expansions", QUOTAS_FULL: "quotas_full",
              PAUSED: "time_budget"}[status]
    vis = visited[:nvis[0]]
    out = {"reason": reason, "visited": vis, "collected": collected[:ncol[0]], "score": score[vis].copy(),
           "cost": cost[vis].copy(), "parent": parent[vis].copy(), "counts": {int(t): int(counts[t]) for t in quotas}}
    # every node touched was finalised (visited) or still sits in the heap: reset just those,
    # so the next query pays for what it explores, not for the size of the graph
    best[vis] = -np.inf
    best[hn[:h[0]]] = -np.inf
    return out


_LOCAL = threading.local()


def _workspace(n: int, cap: int) -> dict:
    """Per-thread buffers, allocated once per graph size (queries run in many threads)."""
    ws = getattr(_LOCAL, "ws", None)
    if ws is None or ws["n"] != n or ws["cap"] < cap:
        ws = {"n": n, "cap": cap, "best": np.full(n, -np.inf),
              "score": np.zeros(n), "cost": np.zeros(n), "parent": np.full(n, -1, np.int64),
              "hs": np.empty(cap), "hc": np.empty(cap), "hw": np.empty(cap),
              "hn": np.empty(cap, np.int64), "hp": np.empty(cap, np.int64)}
        _LOCAL.ws = ws
    return ws
