"""The diffusion's best-first loop compiled with numba: same algorithm, same order, same
results as `diffusion.py` (the reference, tested against this one), ~50-100x faster.

The heap is a 4-ary heap in preallocated arrays (score, node, cost, parent, init weight),
sifted by moving a hole rather than swapping; entries order as the reference's tuples do.
Finalised nodes are written in visit order, so the only per-node buffer holds each node's
similarity and the best score queued for it, interleaved. The loop runs in slices of
`SLICE` expansions so the caller can read the clock between slices (numba has no clock):
the time budget is checked every SLICE expansions instead of every one.
"""
from __future__ import annotations

import threading

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; the reference kernel still works
    numba = None

SLICE = 256
if numba is not None:
    from llvmlite import binding as _llvm
    from llvmlite import ir as _ir
    from numba.core import cgutils as _cgutils
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _prefetch(typingctx, arr, idx):
        """Ask the CPU to start loading arr[idx] (LLVM's prefetch: read, keep in all caches)."""
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = builder.bitcast(_cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]]),
                                  _ir.IntType(8).as_pointer())
            i32 = _ir.IntType(32)
            name = "llvm.prefetch.p0" if _llvm.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"
            fn = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(_ir.VoidType(), [ptr.type] + [i32] * 3),
                                                 name)
            builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
            return context.get_dummy_value()
        return numba.types.void(arr, idx), codegen
EXHAUSTED, MAX_EXPANSIONS, QUOTAS_FULL, PAUSED = 0, 1, 2, 3


def available() -> bool:
    return numba is not None


if numba is not None:
    D = 4  # a 4-ary heap: half the depth of a binary one, and siblings share cache lines

    @numba.njit(cache=True, inline="always")
    def _before(s1, n1, s2, n2):
        # (score, node) is unique among live entries (a node is pushed again only with a
        # strictly higher score), so it orders entries exactly as the reference's tuples do
        return s1 > s2 or (s1 == s2 and n1 < n2)

    @numba.njit(cache=True)
    def _push(h, hs, hn, hc, hp, hw, s, n, c, p, w):
        i = h[0]
        h[0] = i + 1
        while i > 0:  # move parents down into the hole until the new entry fits
            par = (i - 1) // D
            if not _before(s, n, hs[par], hn[par]):
                break
            hs[i], hn[i], hc[i], hp[i], hw[i] = hs[par], hn[par], hc[par], hp[par], hw[par]
            i = par
        hs[i], hn[i], hc[i], hp[i], hw[i] = s, n, c, p, w

    @numba.njit(cache=True)
    def _pop(h, hs, hn, hc, hp, hw):
        top = (hs[0], hn[0], hc[0], hp[0], hw[0])
        size = h[0] - 1
        h[0] = size
        if size > 0:
            s, n, c, p, w = hs[size], hn[size], hc[size], hp[size], hw[size]
            i = 0
            while True:  # move the best child up into the hole until the last entry fits
                first = D * i + 1
                if first >= size:
                    break
                best = first
                for k in range(first + 1, min(first + D, size)):
                    if _before(hs[k], hn[k], hs[best], hn[best]):
                        best = k
                if not _before(hs[best], hn[best], s, n):
                    break
                hs[i], hn[i], hc[i], hp[i], hw[i] = hs[best], hn[best], hc[best], hp[best], hw[best]
                i = best
            hs[i], hn[i], hc[i], hp[i], hw[i] = s, n, c, p, w
        return top

    @numba.njit(cache=True, nogil=True)
    def _load_sim(node, sim, lazy):
        """Copy the query's similarities beside the best scores; returns how many are NaN (to
        compute when first read: allowed with `lazy`), or -1 if one is not finite otherwise."""
        missing, bad = 0, False
        for i in range(sim.shape[0]):
            x = sim[i]
            node[i, 0] = x
            if x != x:
                missing += 1
            elif not np.isfinite(x):
                bad = True
        return -1 if bad or (missing and not lazy) else missing

    @numba.njit(cache=True, nogil=True, fastmath=True)
    def _dot(vec_mat, r, qv):
        # fastmath lets LLVM vectorise the sum (it reorders the additions, as BLAS does)
        acc = np.float32(0.0)
        for j in range(qv.shape[0]):
            acc += vec_mat[r, j] * qv[j]
        return acc

    @numba.njit(cache=True, nogil=True, inline="always")
    def _sim(node, v, vec_row, vec_mat, qv):
        """node v's similarity: as loaded, or (NaN) its cosine to the question from its
        vector, clipped at 0 and kept; 0 for a node without a vector."""
        x = node[v, 0]
        if x != x:
            x = 0.0
            r = vec_row[v]
            if r >= 0:
                x = max(np.float64(_dot(vec_mat, r, qv)), 0.0)
            node[v, 0] = x
        return x

    @numba.njit(cache=True)
    def _push_seeds(h, hs, hn, hc, hp, hw, node, seed_idx, seed_w, vec_row, vec_mat, qv):
        for i in range(seed_idx.shape[0]):  # seeds bypass the score floor and the frontier cap
            s = seed_idx[i]
            sc = (_sim(node, s, vec_row, vec_mat, qv) if vec_row.shape[0] else node[s, 0]) * seed_w[i]
            if sc > node[s, 1]:
                node[s, 1] = sc
                _push(h, hs, hn, hc, hp, hw, sc, s, 0.0, -1, seed_w[i])

    @numba.njit(cache=True, nogil=True)  # readers' queries run in parallel threads
    def _run_slice(indptr, indices, ecost, ntype, node, quotas, counts, h, hs, hn, hc, hp, hw,
                   out_score, out_cost, out_parent, visited, nvis, collected, ncol, open_q, max_exp, limit,
                   max_frontier, min_score, steps, lazy, vec_row, vec_mat, qv):
        """Up to `steps` expansions; returns a status code. State lives in the arrays."""
        done = 0
        while h[0] > 0:
            if nvis[0] >= max_exp:
                return MAX_EXPANSIONS
            if done >= steps:
                return PAUSED
            s, u, cu, pu, w = _pop(h, hs, hn, hc, hp, hw)
            if node[u, 1] == np.inf:
                continue  # stale: finalised earlier at a better score
            done += 1
            node[u, 1] = np.inf  # finalised: no candidate can beat +inf
            k = nvis[0]
            visited[k], out_score[k], out_cost[k], out_parent[k] = u, s, cu, pu
            nvis[0] = k + 1
            t = ntype[u]
            if quotas[t] >= 0 and counts[t] < quotas[t]:
                counts[t] += 1
                collected[ncol[0]] = k
                ncol[0] += 1
                if counts[t] == quotas[t]:
                    open_q[0] -= 1  # a counter, not a scan of every type per expansion
                    if open_q[0] == 0:
                        return QUOTAS_FULL
            if h[0] > 0:
                # the next expansion most likely takes today's top: start loading its row now,
                # while this one is relaxed (the loads of a random graph are its cost)
                nlo = indptr[hn[0]]
                _prefetch(indices, nlo)
                _prefetch(ecost, nlo)
            lo = indptr[u]
            hi = min(indptr[u + 1], lo + limit)
            for e in range(lo, hi):
                v = indices[e]
                bv = node[v, 1]
                if bv == np.inf:
                    continue  # finalised (its parent, for one): no need to read its similarity
                c = cu + ecost[e]
                # a loop-invariant test: LLVM unswitches it, so the loop without vectors is
                # the plain one (a lazy read in it cost ~30% at 30k nodes)
                x = _sim(node, v, vec_row, vec_mat, qv) if lazy else node[v, 0]
                sc = x * w / (1.0 + c)
                if sc >= min_score and sc > bv:
                    if h[0] >= max_frontier:
                        break
                    node[v, 1] = sc
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
        time_budget_s: float, clock, vectors=None) -> dict:
    """The loop of `diffusion.diffuse` (seeds pushed, then best-first); returns its state:
    visited nodes with their score, cost and parent in visit order, and `collected` as
    positions in that order. With `vectors` (row per node, matrix, question), a NaN in `sim`
    is that node's clipped cosine, computed the first time the loop reads it."""
    n = ga.n_nodes
    max_expansions, limit, frontier = max(0, max_expansions), max(0, per_node_neighbor_limit), max(0, max_frontier_size)
    node, hs, hn, hc, hp, hw = _workspace(n, frontier + seed_idx.size + limit + 1)
    seed_w = seed_w.astype(np.float64)
    vec_row, vec_mat, qv = vectors if vectors is not None else _NO_VECTORS
    # +inf marks a finalised node: a non-finite input would corrupt the next query's state
    missing = _load_sim(node, sim, vectors is not None)
    if missing < 0 or not np.isfinite(seed_w).all():
        raise ValueError("similarities and seed weights must be finite")
    lazy = missing > 0  # with none to compute, the loop without vectors
    m = min(n, max_expansions) + 1
    visited, out_parent = np.empty(m, np.int64), np.empty(m, np.int64)
    out_score, out_cost, collected = np.empty(m), np.empty(m), np.empty(m, np.int64)
    h, nvis, ncol = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    q, counts = np.full(256, -1, np.int64), np.zeros(256, np.int64)
    for t, k in quotas.items():
        q[t] = k
    open_q = np.array([sum(1 for k in quotas.values() if k > 0)], np.int64)
    try:
        _push_seeds(h, hs, hn, hc, hp, hw, node, seed_idx.astype(np.int64), seed_w, vec_row, vec_mat, qv)
        status = QUOTAS_FULL if open_q[0] == 0 else PAUSED
        start = clock()
        while status == PAUSED and clock() - start <= time_budget_s:
            status = _run_slice(ga.indptr, ga.indices, ga.cost, ga.node_type, node, q, counts, h, hs, hn, hc, hp, hw,
                                out_score, out_cost, out_parent, visited, nvis, collected, ncol, open_q,
                                max_expansions, limit, frontier, min_enqueue_score, SLICE, lazy, vec_row, vec_mat, qv)
    finally:
        # every node touched was finalised (visited) or still sits in the heap: reset just
        # those, so the buffer is clean for the thread's next query whatever happened here
        node[visited[:nvis[0]], 1] = -np.inf
        node[hn[:h[0]], 1] = -np.inf
    reason = {EXHAUSTED: "exhausted", MAX_EXPANSIONS: "max_expansions", QUOTAS_FULL: "quotas_full",
              PAUSED: "time_budget"}[status]
    k = int(nvis[0])
    return {"reason": reason, "visited": visited[:k], "score": out_score[:k], "cost": out_cost[:k],
            "parent": out_parent[:k], "collected": collected[:ncol[0]],
            "counts": {int(t): int(counts[t]) for t in quotas}}


_LOCAL = threading.local()
# no vectors: every similarity is given (one compiled signature either way)
_NO_VECTORS = (np.zeros(0, np.int64), np.zeros((0, 1), np.float32), np.zeros(1, np.float32))


def _workspace(n: int, cap: int) -> tuple:
    """Per-thread buffers, allocated once per graph size (queries run in many threads): per
    node its similarity and the best score queued so far, side by side so that a neighbour
    costs one cache miss, not two; and the heap's five arrays."""
    ws = getattr(_LOCAL, "ws", None)
    if ws is None or ws[0] != n or ws[1] < cap:
        node = np.empty((n, 2))
        node[:, 1] = -np.inf
        ws = (n, cap, node, np.empty(cap), np.empty(cap, np.int64), np.empty(cap),
              np.empty(cap, np.int64), np.empty(cap))
        _LOCAL.ws = ws
    return ws[2:]
