"""Undirected typed graph in CSR form, rows sorted by edge cost.

Each node's neighbour list is ordered cheapest edge first, so "the k cheapest
neighbours" is a plain slice of the row: the diffusion kernel relies on that.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

NODE_TYPE_CODES: dict[str, int] = {
    "file": 0, "chunk": 1, "code": 2, "table": 3, "image": 4, "entity": 5,
}
EDGE_TYPE_CODES: dict[str, int] = {
    "contains": 0, "jump": 1, "passage": 2, "semantic": 3, "synonymy": 4, "other": 5, "api": 6,
}


@dataclass
class GraphArrays:
    indptr: np.ndarray     # int64, n_nodes + 1
    indices: np.ndarray    # int32 neighbour idx per CSR entry (int64 past 2**31 nodes)
    cost: np.ndarray       # float32 edge cost per entry, ascending within each row
    weight: np.ndarray     # float32 raw edge weight per entry
    etype: np.ndarray      # uint8 edge type code per entry
    node_type: np.ndarray  # uint8 per node

    @property
    def n_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def n_entries(self) -> int:
        return int(self.indices.shape[0])


def edge_cost(etype_codes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Traversal cost per edge: strong similarity edges are cheap, structure is fixed."""
    et = np.asarray(etype_codes, dtype=np.uint8)
    w = np.asarray(weights, dtype=np.float64)
    cost = np.full(et.shape, 0.5, dtype=np.float64)  # jump, other, unknown codes
    cost[et == EDGE_TYPE_CODES["contains"]] = 0.3
    cost[et == EDGE_TYPE_CODES["passage"]] = 0.2
    sem = et == EDGE_TYPE_CODES["semantic"]
    cost[sem] = 0.5 / np.maximum(w[sem], 0.1)
    # an API edge's weight is 1 / log2(1 + the sections naming its identifier): cost grows with that log
    api = et == EDGE_TYPE_CODES["api"]
    cost[api] = 0.5 / np.maximum(w[api], 0.1)
    syn = et == EDGE_TYPE_CODES["synonymy"]
    cost[syn] = np.maximum(0.01, 1.0 - w[syn])
    return cost.astype(np.float32)


def build_graph_arrays(n_nodes: int, src: np.ndarray, dst: np.ndarray,
                       etype_codes: np.ndarray, weights: np.ndarray,
                       node_type: np.ndarray) -> GraphArrays:
    """Symmetrise the edge list and lay it out as cost-sorted CSR.

    Self-loops are dropped. Parallel edges between the same pair collapse to the
    cheapest one (ties: lower etype, then higher weight) so they do not eat the
    per-node neighbour limit; both directions pick the same edge, keeping symmetry.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    et = np.asarray(etype_codes, dtype=np.uint8).ravel()
    w = np.asarray(weights, dtype=np.float32).ravel()
    nt = np.asarray(node_type, dtype=np.uint8).ravel()
    if not (src.shape == dst.shape == et.shape == w.shape):
        raise ValueError("src, dst, etype_codes, weights must have equal length")
    if nt.shape[0] != n_nodes:
        raise ValueError("node_type must have n_nodes entries")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n_nodes):
        raise ValueError("edge endpoint out of range")

    keep = src != dst
    src, dst, et, w = src[keep], dst[keep], et[keep], w[keep]
    rows = np.concatenate([src, dst])
    cols = np.concatenate([dst, src])
    et = np.concatenate([et, et])
    w = np.concatenate([w, w])
    cost = edge_cost(et, w)

    # Deduplicate (row, col): the first after sorting by (row, col, cost, etype, -w) wins.
    order = np.lexsort((-w, et, cost, cols, rows))
    rows, cols, et, w, cost = rows[order], cols[order], et[order], w[order], cost[order]
    first = np.ones(rows.shape[0], dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols, et, w, cost = rows[first], cols[first], et[first], w[first], cost[first]

    # Final layout: within each row cheapest first, neighbour idx breaks ties.
    order = np.lexsort((cols, cost, rows))
    rows, cols, et, w, cost = rows[order], cols[order], et[order], w[order], cost[order]
    indptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_nodes), out=indptr[1:])
    # int32 halves the largest array of the graph (6M entries at the seed's scale)
    idx_type = np.int32 if n_nodes < 2**31 else np.int64
    return GraphArrays(indptr=indptr, indices=cols.astype(idx_type), cost=cost,
                       weight=w, etype=et, node_type=nt.copy())


def without_edges(ga: GraphArrays, etype_codes) -> GraphArrays:
    """The same graph less every entry of the given edge types (each row keeps its order, so
    its cost sort holds). The nodes stay, an isolated one included."""
    keep = ~np.isin(ga.etype, np.asarray(list(etype_codes), dtype=np.uint8))
    rows = np.repeat(np.arange(ga.n_nodes, dtype=np.int64), np.diff(ga.indptr))
    indptr = np.zeros(ga.n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=ga.n_nodes), out=indptr[1:])
    return GraphArrays(indptr=indptr, indices=ga.indices[keep], cost=ga.cost[keep], weight=ga.weight[keep],
                       etype=ga.etype[keep], node_type=ga.node_type)


def page_of(ga: GraphArrays) -> np.ndarray:
    """The file node each node hangs under along `contains` edges, breadth-first from the
    files (a node under two parents takes one of them); -1 where none, e.g. entities."""
    n = ga.n_nodes
    page = np.full(n, -1, dtype=np.int64)
    files = np.flatnonzero(ga.node_type == NODE_TYPE_CODES["file"])
    page[files] = files
    keep = ga.etype == EDGE_TYPE_CODES["contains"]
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(ga.indptr))[keep]
    dst = ga.indices[keep].astype(np.int64)
    not_file = ga.node_type[dst] != NODE_TYPE_CODES["file"]
    src, dst = src[not_file], dst[not_file]
    while True:  # one level of the tree per pass; a parent is always placed before its children
        step = (page[src] >= 0) & (page[dst] < 0)
        if not step.any():
            return page
        page[dst[step]] = page[src[step]]


def to_scipy(ga: GraphArrays) -> csr_matrix:
    """Symmetric weighted adjacency (float64) for PPR, with canonically sorted indices."""
    n = ga.n_nodes
    # copy=True: sort_indices works in place and must not reorder ga's cost-sorted rows.
    m = csr_matrix((ga.weight.astype(np.float64), ga.indices, ga.indptr), shape=(n, n), copy=True)
    m.sort_indices()
    return m


def row_entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of several CSR rows at once, in row order: (position in `rows` of each
    entry's row, the entry's index into indices/data). No Python loop over the rows."""
    rows = np.asarray(rows, dtype=np.int64)
    start = indptr[rows]
    counts = indptr[rows + 1] - start
    total = int(counts.sum())
    owner = np.repeat(np.arange(rows.size), counts)
    entry = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(start, counts)
    return owner, entry
