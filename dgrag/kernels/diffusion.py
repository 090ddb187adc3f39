"""Cost-aware best-first diffusion over a GraphArrays graph.

Scores never compound along a path: a node reached at cumulative cost c from a seed
of init weight w scores sim(node) * w / (1 + c). Best-first order therefore finalises
each node at its best score, and the cost-sorted CSR rows make "cheapest k neighbours"
a slice.
"""
from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dgrag.kernels import diffusion_jit
from dgrag.kernels.graph_arrays import GraphArrays

DEFAULT_QUOTAS: dict[int, int] = {1: 100, 2: 5, 3: 5, 4: 5}  # chunk, code, table, image

Seeds = Mapping[int, float] | tuple[np.ndarray, np.ndarray]
# (row of each node in the matrix, -1 for none; float32 vectors; the question's vector)
NodeVectors = tuple[np.ndarray, np.ndarray, np.ndarray]
# Heap entry: (-score, node, cum_cost, parent, init_weight). Negated score makes heapq a
# max-heap; the node idx second breaks score ties by ascending index.
_Entry = tuple[float, int, float, int, float]


@dataclass
class DiffusionResult:
    nodes: np.ndarray        # int64 collected node idx, final score descending
    scores: np.ndarray       # float64 final score (evidence boost applied)
    cost: np.ndarray         # float64 cumulative cost; inf for mandatory nodes never reached
    parent: dict[int, int]   # finalised node -> predecessor, -1 for seeds
    expansions: int
    stop_reason: str         # "exhausted" | "max_expansions" | "time_budget" | "quotas_full"
    visited: np.ndarray      # int64 finalised nodes in expansion order
    node_score: dict[int, float] = field(default_factory=dict)  # finalised node -> score


class KeyIndex:
    """Sorted view of an int array, built on first use and shared by the maps over it."""

    def __init__(self, keys: np.ndarray):
        self.keys, self._order, self._sorted = keys, None, None

    def _sort(self) -> None:
        if self._order is None:
            self._order = np.argsort(self.keys, kind="stable")
            self._sorted = self.keys[self._order]

    def pos(self, key) -> int:
        self._sort()
        i = int(np.searchsorted(self._sorted, key))
        if i < self._sorted.shape[0] and self._sorted[i] == key:
            return int(self._order[i])
        raise KeyError(key)

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """pos() of many keys at once; -1 where absent."""
        if keys.size == 0 or self.keys.size == 0:
            return np.full(keys.shape, -1, np.int64)
        self._sort()
        i = np.minimum(np.searchsorted(self._sorted, keys), self._sorted.shape[0] - 1)
        return np.where(self._sorted[i] == keys, self._order[i], -1)


class LazyMap(Mapping):
    """node -> value over two aligned arrays, looked up by binary search: a query reads a
    handful of entries out of thousands, so no dict is built unless someone iterates."""

    def __init__(self, keys: np.ndarray | KeyIndex, values: np.ndarray):
        self.index = keys if isinstance(keys, KeyIndex) else KeyIndex(np.asarray(keys))
        self.values = values

    def __getitem__(self, key):
        return self.values[self.index.pos(key)].item()

    def __contains__(self, key) -> bool:
        try:
            self.index.pos(key)
            return True
        except KeyError:
            return False

    def __iter__(self):
        return iter(self.index.keys.tolist())

    def __len__(self) -> int:
        return int(self.index.keys.shape[0])


@dataclass
class _State:
    heap: list[_Entry]
    best_queued: np.ndarray  # best score ever pushed per node
    finalised: np.ndarray    # bool per node
    score: dict[int, float]
    cost: dict[int, float]
    parent: dict[int, int]
    visited: list[int] | np.ndarray
    collected: list[int]
    counts: dict[int, int]
    collected_score: list[float] | None = None  # the compiled loop hands these over directly
    collected_cost: list[float] | None = None


def _seed_arrays(seeds: Seeds) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(seeds, Mapping):
        idx = np.fromiter((int(k) for k in seeds.keys()), dtype=np.int64, count=len(seeds))
        w = np.fromiter((float(v) for v in seeds.values()), dtype=np.float64, count=len(seeds))
        return idx, w
    idx, w = seeds
    return np.asarray(idx, dtype=np.int64).ravel(), np.asarray(w, dtype=np.float64).ravel()


def _push_seeds(st: _State, node_sim: np.ndarray, seeds: Seeds) -> None:
    # Seeds are the caller's choice: they bypass min_enqueue_score and the frontier cap.
    idx, w = _seed_arrays(seeds)
    for s, iw in zip(idx.tolist(), w.tolist()):
        score = float(node_sim[s]) * iw  # sim * weight / (1 + cost), a seed's cost being 0
        if score > st.best_queued[s]:
            st.best_queued[s] = score
            heapq.heappush(st.heap, (-score, s, 0.0, -1, iw))


def _relax(st: _State, ga: GraphArrays, node_sim: np.ndarray, u: int, cost_u: float,
           init_w: float, limit: int, min_score: float, max_frontier: int) -> None:
    lo = int(ga.indptr[u])
    hi = min(int(ga.indptr[u + 1]), lo + limit)  # rows are cost-sorted: prefix = cheapest
    if hi <= lo:
        return
    nbr = ga.indices[lo:hi]
    c = cost_u + ga.cost[lo:hi].astype(np.float64)
    sc = node_sim[nbr] * init_w / (1.0 + c)
    # Vectorised filter first, so the Python loop only sees real candidates.
    ok = (sc >= min_score) & ~st.finalised[nbr] & (sc > st.best_queued[nbr])
    for v, cv, sv in zip(nbr[ok].tolist(), c[ok].tolist(), sc[ok].tolist()):
        if len(st.heap) >= max_frontier:
            return
        if sv > st.best_queued[v]:  # a duplicate neighbour may have raised it meanwhile
            st.best_queued[v] = sv
            heapq.heappush(st.heap, (-sv, v, cv, u, init_w))


def _quotas_full(counts: Mapping[int, int], quotas: Mapping[int, int]) -> bool:
    return all(counts.get(t, 0) >= q for t, q in quotas.items())


def _collect(st: _State, node: int, ntype: int, quotas: Mapping[int, int]) -> None:
    if ntype in quotas and st.counts.get(ntype, 0) < quotas[ntype]:
        st.counts[ntype] = st.counts.get(ntype, 0) + 1
        st.collected.append(node)


def _run(st: _State, ga: GraphArrays, node_sim: np.ndarray, quotas: Mapping[int, int],
         max_expansions: int, limit: int, max_frontier: int, min_score: float,
         time_budget_s: float, clock: Callable[[], float]) -> str:
    """Best-first loop; returns the stop reason. The clock is read once per expansion."""
    if _quotas_full(st.counts, quotas):
        return "quotas_full"
    start = clock()
    while st.heap:
        if len(st.visited) >= max_expansions:
            return "max_expansions"
        neg, u, cost_u, par, init_w = heapq.heappop(st.heap)
        if st.finalised[u]:
            continue  # stale entry: u was already finalised at a better score
        if clock() - start > time_budget_s:
            return "time_budget"
        st.finalised[u] = True
        st.score[u], st.cost[u], st.parent[u] = -neg, cost_u, par
        st.visited.append(u)
        _collect(st, u, int(ga.node_type[u]), quotas)
        if _quotas_full(st.counts, quotas):
            return "quotas_full"
        _relax(st, ga, node_sim, u, cost_u, init_w, limit, min_score, max_frontier)
    return "exhausted"


def _lookup(st: _State, nodes: list[int]) -> tuple[list[bool], list[float], list[float]]:
    """(finalised?, score, cost) of each node: one vectorised search over the compiled loop's
    visit order, or dict reads after the reference loop."""
    if isinstance(st.score, LazyMap):
        if not len(st.score):
            return [False] * len(nodes), [0.0] * len(nodes), [0.0] * len(nodes)
        pos = st.score.index.positions(np.asarray(nodes, dtype=np.int64))
        ok, p = pos >= 0, np.maximum(pos, 0)
        return ok.tolist(), st.score.values[p].tolist(), st.cost.values[p].tolist()
    return ([n in st.score for n in nodes], [st.score.get(n, 0.0) for n in nodes],
            [st.cost.get(n, 0.0) for n in nodes])


def _finish(st: _State, node_sim: np.ndarray, mandatory: Sequence[int],
            ga: GraphArrays, quotas: Mapping[int, int],
            evidence: np.ndarray | None, evidence_weight: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nodes = list(st.collected)
    scores = st.collected_score if st.collected_score is not None else [st.score[u] for u in nodes]
    costs = st.collected_cost if st.collected_cost is not None else [st.cost[u] for u in nodes]
    seen = set(nodes)
    extra = [m for m in dict.fromkeys(int(x) for x in mandatory) if m not in seen]
    # finalised but not collected (its quota was full): its diffusion score; else its own sim
    reached, score_m, cost_m = _lookup(st, extra)
    for m, ok, sm, cm in zip(extra, reached, score_m, cost_m):
        nodes.append(m)
        scores.append(sm if ok else float(node_sim[m]) * 1.0)
        costs.append(cm if ok else float("inf"))
        _collect(st, m, int(ga.node_type[m]), quotas)  # counts only if there is room
    n_arr = np.asarray(nodes, dtype=np.int64)
    s_arr = np.asarray(scores, dtype=np.float64)
    c_arr = np.asarray(costs, dtype=np.float64)
    if evidence is not None and evidence_weight > 0 and n_arr.size:
        # Graph evidence lifts a passage above a weaker dense hit.
        s_arr = s_arr * (1.0 + evidence_weight * np.asarray(evidence, dtype=np.float64)[n_arr])
    order = np.lexsort((n_arr, -s_arr))  # score desc, node idx asc on ties
    return n_arr[order], s_arr[order], c_arr[order]


def diffuse(ga: GraphArrays, node_sim: np.ndarray, seeds: Seeds,
            mandatory: Sequence[int] = (), *,
            quotas: Mapping[int, int] | None = None,
            max_expansions: int = 12000, per_node_neighbor_limit: int = 96,
            max_frontier_size: int = 20000, min_enqueue_score: float = 0.01,
            time_budget_s: float = 2.0, clock: Callable[[], float] = time.perf_counter,
            evidence_weight: float = 0.0, evidence: np.ndarray | None = None, engine: str = "python",
            vectors: NodeVectors | None = None) -> DiffusionResult:
    """Best-first diffusion from `seeds` collecting up to `quotas[node_type]` nodes per type.

    `quotas` is keyed by node type code; types absent from it are traversed but never
    collected. `mandatory` nodes are always in the result. `engine="jit"` runs the same
    loop compiled (diffusion_jit; the clock is then read every 256 expansions).
    With `vectors`, a NaN in `node_sim` stands for that node's cosine to the question,
    clipped at 0 (`node_cosines`): the compiled loop computes it only for the nodes it
    reaches, a few thousand of a graph's 500k (the reference computes them all first).
    """
    n = ga.n_nodes
    sim = np.asarray(node_sim, dtype=np.float64).ravel()
    if sim.shape[0] != n:
        raise ValueError("node_sim must have one entry per node")
    quotas = dict(DEFAULT_QUOTAS if quotas is None else quotas)
    if vectors is not None:
        vectors = _checked_vectors(vectors, n)
    if engine == "jit" and diffusion_jit.available():
        idx, w = _seed_arrays(seeds)
        out = diffusion_jit.run(ga, sim, idx, w, quotas, max_expansions=max_expansions,
                                per_node_neighbor_limit=per_node_neighbor_limit,
                                max_frontier_size=max_frontier_size, min_enqueue_score=min_enqueue_score,
                                time_budget_s=time_budget_s, clock=clock, vectors=vectors)
        vis, keys = out["visited"], KeyIndex(out["visited"])
        st = _State(heap=[], best_queued=np.empty(0), finalised=np.empty(0, dtype=bool),
                    score=LazyMap(keys, out["score"]), cost=LazyMap(keys, out["cost"]),
                    parent=LazyMap(keys, out["parent"]), visited=vis,
                    collected=vis[out["collected"]].tolist(), counts=out["counts"],
                    collected_score=out["score"][out["collected"]].tolist(),
                    collected_cost=out["cost"][out["collected"]].tolist())
        reason = out["reason"]
        if vectors is not None:  # an unreached mandatory node scores its own similarity
            sim = _resolved(sim, vectors, np.asarray(mandatory, dtype=np.int64))
    else:
        if vectors is not None:
            sim = _resolved(sim, vectors, np.arange(n))
        elif np.isnan(sim).any():
            raise ValueError("a NaN similarity needs the vectors to compute it from")
        st = _State(heap=[], best_queued=np.full(n, -np.inf), finalised=np.zeros(n, dtype=bool),
                    score={}, cost={}, parent={}, visited=[], collected=[], counts={})
        _push_seeds(st, sim, seeds)
        reason = _run(st, ga, sim, quotas, max_expansions, per_node_neighbor_limit,
                      max_frontier_size, min_enqueue_score, time_budget_s, clock)
    nodes, scores, costs = _finish(st, sim, mandatory, ga, quotas, evidence, evidence_weight)
    return DiffusionResult(nodes=nodes, scores=scores, cost=costs, parent=st.parent,
                           expansions=len(st.visited), stop_reason=reason,
                           visited=np.asarray(st.visited, dtype=np.int64),
                           node_score=st.score)


def node_cosines(vectors: NodeVectors, nodes: np.ndarray) -> np.ndarray:
    """The clipped cosine of `nodes` to the question (float32 sums, as the compiled loop's,
    though not in its order); 0 for a node without a vector (row -1)."""
    row, mat, q = vectors
    rows = row[np.asarray(nodes, dtype=np.int64)]
    out = np.zeros(rows.shape[0])
    ok = rows >= 0
    if ok.any():
        out[ok] = mat[rows[ok]] @ q
    return np.maximum(out, 0.0)


def _checked_vectors(vectors: NodeVectors, n: int) -> NodeVectors:
    row, mat, q = vectors
    row = np.asarray(row, dtype=np.int64)
    if row.shape != (n,):
        raise ValueError("vectors: one row index per node")
    if mat.dtype != np.float32 or not mat.flags.c_contiguous:  # the loaded index's own layout: no copy
        mat = np.ascontiguousarray(mat, dtype=np.float32)
    q = np.ascontiguousarray(q, dtype=np.float32).ravel()
    if mat.ndim != 2 or mat.shape[1] != q.shape[0]:
        raise ValueError("vectors: the matrix's width must be the question vector's")
    return row, mat, q


def _resolved(sim: np.ndarray, vectors: NodeVectors, nodes: np.ndarray) -> np.ndarray:
    """A copy of `sim` with the NaN entries among `nodes` computed from `vectors`."""
    nodes = nodes[np.isnan(sim[nodes])] if nodes.size else nodes
    if not nodes.size:
        return sim
    out = sim.copy()
    out[nodes] = node_cosines(vectors, nodes)
    return out


def path_to(result: DiffusionResult, node: int) -> list[int]:
    """Seed-first path [seed, ..., node] along finalised parents; [] if node was never reached."""
    node = int(node)
    if node not in result.parent:
        return []
    path = [node]
    while result.parent[path[-1]] != -1:
        path.append(result.parent[path[-1]])
    path.reverse()
    return path
