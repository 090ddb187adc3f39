"""The fact route's approximate index: past `Settings.fact_ann_min_vectors` fact vectors, an
HNSW index (kernels/ann.py) of the snapshot's `fact_vec`, read from the file when it indexes
exactly these vectors, else built and written back (best effort: a read-only or busy file keeps
the one built in memory, and the next start builds again).

Built at load rather than at the end of enrichment: every path that changes the facts (index,
enrich, the progressive build's batches, an import) ends in a load of the new snapshot (the
writer's reload, built aside while questions use the old one), and a load has to check the
stored index against the vectors anyway, so one hook covers them all, and a file written by a
dgrag without the `ann` extra gets its index when it first opens with one. `dgrag snapshot`
builds it too, so a shipped copy starts without building (or writing) anything.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ..config import Settings
from ..kernels import ann
from ..kernels.knn import fold_equal_rows
from ..store import Store

log = logging.getLogger(__name__)
KIND = "fact"


@dataclass(frozen=True)
class FactSearch:
    """How a snapshot's fact route searches: `index` is the approximate index (None: exact),
    `how` says which and why, in words (the load's log, `dgrag snapshot`)."""

    index: object | None  # faiss's search is thread-safe: requests search it at once, no lock
    how: str
    folded: tuple[np.ndarray, np.ndarray] | None = None  # fold_equal_rows's (indptr, members), if any row repeats


EXACT = FactSearch(None, "exact")


def fact_search(path, meta: dict, rowids: np.ndarray, vectors: np.ndarray, settings: Settings,
                write_back: bool = True) -> FactSearch:
    """The fact route's search for a snapshot's facts (`rowids`, `vectors` in row order)."""
    n = int(vectors.shape[0])
    if n == 0 or n < settings.fact_ann_min_vectors:
        return EXACT
    if not ann.available():
        how = (f"exact: {n:,} fact vectors reach fact_ann_min_vectors ({settings.fact_ann_min_vectors:,}), "
               f"but {ann.LIBRARY} is not installed: pip install 'dgrag[ann]' for the approximate route")
        log.warning("%s: %s", path, how)
        return FactSearch(None, how)
    model, fp = str(meta.get("embedding_model") or ""), ann.fingerprint(rowids, vectors)
    keep, indptr, members = fold_equal_rows(vectors)  # the index holds each distinct vector once
    folded = (indptr, members) if keep.size < n else None
    with Store(path, readonly=True) as st:
        stored = st.ann.read(KIND, model, n, fp)
    if stored is not None:
        head, blob = stored
        index = ann.deserialize(blob)
        if ann.size(index) == keep.size:  # else built over every row, before folding: build again
            return FactSearch(index, f"approximate: {head.library}, from the file", folded)
    t0 = time.perf_counter()
    index = ann.build(vectors[keep], threads=settings.index_threads)
    built_s = time.perf_counter() - t0
    log.info("%s: built the fact ANN index of %d vectors (%d distinct) in %.1fs", path, n, keep.size, built_s)
    kept = write_back and _write(path, model, n, fp, index, built_s)
    return FactSearch(index, f"approximate: {ann.describe(index)}, built in {built_s:.1f}s"
                             + ("" if kept else " (not stored: the file was read-only or busy)"), folded)


def _write(path, model: str, n: int, fp: str, index, built_s: float) -> bool:
    try:
        with Store(path, timeout=5.0) as st:
            st.write_ann(KIND, model, n, fp, ann.describe(index), ann.serialize(index), built_s)
        return True
    except Exception as exc:  # noqa: BLE001 - a cache: never worth failing a load for
        log.warning("%s: the fact ANN index was not stored (%s); the next load builds it again", path, exc)
        return False


def recall(search: FactSearch, vectors: np.ndarray, qv: np.ndarray, k: int,
           breadth: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Positions and exact cosines of the k best facts the approximate index finds among its
    `breadth` candidates, or None where the route is exact (no index, or breadth 0)."""
    if search.index is None or breadth <= 0:
        return None
    return ann.search_rescored(search.index, vectors, qv, k, max(breadth, k), search.folded)
