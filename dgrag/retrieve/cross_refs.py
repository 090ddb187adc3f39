"""Section-to-section cross-references for the ranking's `xref` feature: the API edges (a guide
naming an API and the reference section defining it, ingest/xref.py) and the jump links whose
anchor names a section. Unlike the `link` feature, which joins pages, these join the very
sections, so the credit lands on the section that answers, not on its page."""
from __future__ import annotations

import numpy as np

from ..kernels.graph_arrays import EDGE_TYPE_CODES, NODE_TYPE_CODES, row_entries
from .loaded import LoadedIndex

API, JUMP = EDGE_TYPE_CODES["api"], EDGE_TYPE_CODES["jump"]
CHUNK = NODE_TYPE_CODES["chunk"]


def _edges(li: LoadedIndex, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cross-reference entries of `rows`: (position in `rows` of each, the section it joins)."""
    ga = li.ga
    owner, entry = row_entries(ga.indptr, np.asarray(rows, dtype=np.int64))
    nbr = ga.indices[entry].astype(np.int64)
    et = ga.etype[entry]
    both_sections = (ga.node_type[nbr] == CHUNK) & (ga.node_type[np.asarray(rows, dtype=np.int64)[owner]] == CHUNK)
    keep = (et == API) | ((et == JUMP) & both_sections)
    return owner[keep], nbr[keep]


def reached(li: LoadedIndex, top: np.ndarray) -> np.ndarray:
    """The sections the `top` passages cross-reference: candidates the question's words may
    not reach (the reference section of the API a matching guide calls)."""
    if top.size == 0:
        return np.zeros(0, np.int64)
    _, nbr = _edges(li, top)
    return np.unique(nbr)


def evidence(li: LoadedIndex, top: np.ndarray, base: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """Per candidate: the best base score among the `top` passages (`base`, theirs, in order)
    that cross-reference it, over log2(1 + its cross-references), so that a reference section
    every guide names (`getState()`) gains little from any one of them."""
    out = np.zeros(cands.size)
    if top.size == 0 or cands.size == 0:
        return out
    owner, nbr = _edges(li, top)
    credit: dict[int, float] = {}
    for o, v in zip(owner.tolist(), nbr.tolist()):
        credit[v] = max(credit.get(v, 0.0), float(base[o]))
    hit = [i for i, c in enumerate(cands.tolist()) if c in credit]
    if not hit:
        return out
    at = cands[hit]
    degree = np.bincount(_edges(li, at)[0], minlength=at.size)
    out[hit] = [credit[int(c)] for c in at.tolist()] / np.log2(1.0 + np.maximum(degree, 1))
    return out
