"""What the inspector's picture and its "why" lines need from one diffusion, kept only when
the request is verbose: how each seed was found, the type and cost of every edge walked, and
each visited node's score. Built on graph indices; `rowid_trace` turns them into row ids, the
names that outlive a reload of the graph."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core import Route
from ..kernels.diffusion import DiffusionResult, LazyMap
from ..kernels.graph_arrays import EDGE_TYPE_CODES, GraphArrays
from .loaded import LoadedIndex

EDGE_NAMES = {code: name for name, code in EDGE_TYPE_CODES.items()}
PICTURE_NODES = 400  # visited nodes kept for the picture, in expansion order


def seed_reasons(li: LoadedIndex, facts: Route, files: Route, chunks: Route, exact: list[int],
                 fact_seed_k: int, file_seed_k: int) -> dict[int, dict]:
    """Why each seed is one, by graph index: {"via": "question", "similarity": cosine} for a
    chunk or page the question's vector found, {"via": "name"} for an entity named in the
    question, {"via": "fact", "fact": fact rowid, "similarity": cosine} for an entity of a
    matched fact and {"via": "fact source", ...} for the chunk that fact was read from. The
    most direct reason wins when a node has several."""
    out: dict[int, dict] = {}
    for n, c in zip(chunks.positions.tolist(), chunks.cosine.tolist()):
        out.setdefault(int(n), {"via": "question", "similarity": round(float(c), 4)})
    for n, c in zip(files.positions[:file_seed_k].tolist(), files.cosine[:file_seed_k].tolist()):
        out.setdefault(int(n), {"via": "question", "similarity": round(float(c), 4)})
    for e in exact:
        out.setdefault(int(e), {"via": "name"})
    top = facts.positions[:fact_seed_k]
    for pos, c in zip(top.tolist(), facts.cosine[:fact_seed_k].tolist()):
        why = {"fact": int(li.fact_rowids[pos]), "similarity": round(float(c), 4)}
        for e in (int(li.fact_head[pos]), int(li.fact_tail[pos])):
            if e >= 0:
                out.setdefault(e, {"via": "fact", **why})
        if int(li.fact_chunk[pos]) >= 0:
            out.setdefault(int(li.fact_chunk[pos]), {"via": "fact source", **why})
    return out


def hops(ga: GraphArrays, pairs: list[tuple[int, int]]) -> list[list]:
    """[a, b, edge type, traversal cost] of each edge a-b (the graph keeps one edge per pair);
    each row read once, as a tree repeats its parents."""
    rows: dict[int, dict[int, int]] = {}
    out = []
    for a, b in pairs:
        if a not in rows:
            lo, hi = int(ga.indptr[a]), int(ga.indptr[a + 1])
            rows[a] = {int(c): lo + j for j, c in enumerate(ga.indices[lo:hi].tolist())}
        e = rows[a].get(b)
        out.append([a, b, "other", float("nan")] if e is None else
                   [a, b, EDGE_NAMES.get(int(ga.etype[e]), "other"), round(float(ga.cost[e]), 4)])
    return out


def _values(m: Mapping[int, float], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(found, value) of each key: one vectorised search over the compiled walk's arrays."""
    if isinstance(m, LazyMap):
        pos = m.index.positions(keys)
        return pos >= 0, np.asarray(m.values)[np.maximum(pos, 0)]
    found = np.array([int(k) in m for k in keys.tolist()], dtype=bool)
    return found, np.array([m.get(int(k), 0) for k in keys.tolist()])


def picture_trace(li: LoadedIndex, res: DiffusionResult, sim: np.ndarray, paths: Mapping[int, list[int]],
                  reasons: dict[int, dict]) -> dict:
    """The verbose trace's picture fields: `hops` [parent, child, edge type, cost] for the
    expansion tree of the first PICTURE_NODES visited nodes and every path to a result,
    `score` and `similarity` per node of either, `seed_why` for the seeds among them."""
    visited = np.asarray(res.visited[:PICTURE_NODES], dtype=np.int64)
    has, parent = _values(res.parent, visited)
    keep = has & (parent >= 0)
    pairs = set(zip(parent[keep].astype(np.int64).tolist(), visited[keep].tolist()))
    for p in paths.values():
        pairs.update(zip(p, p[1:]))
    nodes = np.array(sorted(set(visited.tolist()) | {n for p in paths.values() for n in p}), dtype=np.int64)
    has, score = _values(res.node_score, nodes)
    drawn = set(nodes.tolist())
    return {"hops": hops(li.ga, sorted(pairs)),
            "score": dict(zip(nodes[has].tolist(), np.round(score[has].astype(np.float64), 4).tolist())),
            "similarity": dict(zip(nodes.tolist(), np.round(sim[nodes], 4).tolist())),
            "seed_why": {n: r for n, r in reasons.items() if n in drawn}}


def rowid_trace(li: LoadedIndex, st: Mapping, paths: Mapping[int, list[int]] | None = None) -> dict:
    """The stage-3 trace, and the `paths` to the results (none for ppr and dense), with every
    graph index replaced by its node's row id (a string)."""
    def rid(n) -> str:
        return str(li.rowids[int(n)])

    st = dict(st)
    for key in ("visited", "mandatory"):
        if key in st:
            st[key] = [rid(n) for n in st[key]]
    if "seeds" in st:
        st["seeds"] = [(rid(n), w) for n, w in st["seeds"]]
    if "edges" in st:
        st["edges"] = [(rid(a), rid(b)) for a, b in st["edges"]]
    if paths is not None:
        st["paths"] = {rid(n): [rid(x) for x in p] for n, p in paths.items()}
    if "ranking" in st:
        st["ranking"] = {**st["ranking"], "nodes": [rid(n) for n in st["ranking"]["nodes"]]}
    if "hops" in st:
        st["hops"] = [[rid(a), rid(b), t, c] for a, b, t, c in st["hops"]]
    for key in ("score", "similarity", "seed_why"):
        if key in st:
            st[key] = {rid(n): v for n, v in st[key].items()}
    return st
