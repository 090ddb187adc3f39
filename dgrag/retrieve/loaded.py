"""The index loaded for answering: graph arrays, vectors and facts, read once from the file.

A `LoadedIndex` is immutable; `IndexHandle` holds the current one and swaps in a new one
built aside after an indexing run, so a query sees the old graph or the new, never a mix.
"""
from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import Settings
from ..kernels.graph_arrays import EDGE_TYPE_CODES, NODE_TYPE_CODES, GraphArrays, build_graph_arrays
from ..kernels.lexical import LexicalIndex, TitleIndex
from ..store import VECTOR_TYPES, Store
from .fact_ann import EXACT, FactSearch, fact_search
from .shape import prose_share, release_sections


@dataclass
class LoadedIndex:
    path: Path
    meta: dict
    rowids: np.ndarray            # graph index -> node rowid (ascending)
    node_type: np.ndarray         # uint8 code per graph index
    ga: GraphArrays
    vec_idx: np.ndarray           # graph index of each row of vec_mat (grouped by kind)
    vec_mat: np.ndarray           # float32 (rows, d): the vectors, only of nodes that have one
    type_slices: dict[str, tuple[int, int]]  # kind -> its rows [a, b) in vec_idx / vec_mat
    fact_rowids: np.ndarray
    fact_head: np.ndarray         # graph index of head entity
    fact_tail: np.ndarray
    fact_chunk: np.ndarray        # graph index of source chunk
    fact_vec: np.ndarray
    entity_by_name: dict[str, int]  # normalised name -> graph index
    load_seconds: float = 0.0
    fact_search: FactSearch = EXACT  # the fact route's approximate index, past fact_ann_min_vectors
    _igraph: dict = field(default_factory=dict, repr=False)  # each keyed by `tree` (see `walked`)
    _csr: dict = field(default_factory=dict, repr=False)
    _wdeg: dict = field(default_factory=dict, repr=False)
    _no_tree: object = field(default=None, repr=False)
    _page: object = field(default=None, repr=False)
    _vec_row: object = field(default=None, repr=False)
    _of_type: dict = field(default_factory=dict, repr=False)
    _lexical: object = field(default=None, repr=False)
    _titles: object = field(default=None, repr=False)
    _language: object = field(default=None, repr=False)
    _prose: object = field(default=None, repr=False)
    _release: object = field(default=None, repr=False)
    _passages: object = field(default=None, repr=False)
    _lexical_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def n_nodes(self) -> int:
        return int(self.rowids.shape[0])

    def similarity(self, qv: np.ndarray) -> np.ndarray:
        """Cosine of every node to the query (0 for nodes without a vector)."""
        sim = np.zeros(self.n_nodes, dtype=np.float64)
        if self.vec_mat.size:
            sim[self.vec_idx] = self.vec_mat @ qv
        return sim

    def type_rows(self, kind: str) -> np.ndarray:
        a, b = self.type_slices.get(kind, (0, 0))
        return self.vec_idx[a:b]

    @property
    def n_edges(self) -> int:
        return int(self.ga.indices.shape[0] // 2)

    def index_of(self, rowids: np.ndarray) -> np.ndarray:
        """Graph indices of node rowids (-1 where absent)."""
        rowids = np.asarray(rowids, dtype=np.int64)
        pos = np.searchsorted(self.rowids, rowids)
        pos = np.minimum(pos, max(self.n_nodes - 1, 0))
        ok = (self.n_nodes > 0) & (self.rowids[pos] == rowids) if self.n_nodes else np.zeros(rowids.shape, bool)
        return np.where(ok, pos, -1)

    def walked(self, tree: bool = True) -> GraphArrays:
        """The graph PPR walks: every edge, or without the tree's `contains` edges (`tree` False:
        a page or a parent section, joined to each of its parts, would gather their mass as a
        hub; HippoRAG's graph is entities and passages). Built on first use."""
        if tree:
            return self.ga
        if self._no_tree is None:
            from ..kernels.graph_arrays import without_edges

            self._no_tree = without_edges(self.ga, [EDGE_TYPE_CODES["contains"]])
        return self._no_tree

    def adjacency(self, tree: bool = True):
        """The weighted adjacency of `walked(tree)` as a SciPy CSR matrix (built on first use, for PPR)."""
        if tree not in self._csr:
            from ..kernels.graph_arrays import to_scipy

            self._csr[tree] = to_scipy(self.walked(tree))
        return self._csr[tree]

    def nodes_of_type(self, code: int) -> np.ndarray:
        """Graph indices of one node type, ascending (built on first use: queries ask often)."""
        rows = self._of_type.get(code)
        if rows is None:
            rows = self._of_type[code] = np.flatnonzero(self.node_type == code)
        return rows

    def vec_row(self) -> np.ndarray:
        """Per graph index, its row of vec_mat (-1 for a node without a vector)."""
        if self._vec_row is None:
            inv = np.full(self.n_nodes, -1, dtype=np.int64)
            inv[self.vec_idx] = np.arange(self.vec_idx.shape[0])
            self._vec_row = inv
        return self._vec_row

    def cosine(self, qv: np.ndarray, nodes) -> np.ndarray:
        """Cosine of a few nodes to the query (0 for a node without a vector)."""
        rows = self.vec_row()[np.asarray(nodes, dtype=np.int64)]
        out = np.zeros(rows.shape[0])
        ok = rows >= 0
        out[ok] = self.vec_mat[rows[ok]] @ qv
        return out

    def page_of(self) -> np.ndarray:
        """The file node each node hangs under, -1 for none (built on first use)."""
        if self._page is None:
            from ..kernels.graph_arrays import page_of

            self._page = page_of(self.ga)
        return self._page

    def passage_pages(self) -> bool:
        """True where no page holds more than one section: a passage corpus (`import-passages`,
        or pages of one heading each), where a question's later hop is another page."""
        if self._passages is None:
            page = self.page_of()[self.nodes_of_type(NODE_TYPE_CODES["chunk"])]
            page = page[page >= 0]
            self._passages = bool(page.size == 0 or np.bincount(page).max() <= 1)
        return self._passages

    def weighted_degree(self, tree: bool = True) -> np.ndarray:
        """Sum of edge weights per node of `walked(tree)` (built on first use, for the push PPR)."""
        if tree not in self._wdeg:
            from ..kernels.ppr_push import weighted_degree

            g = self.walked(tree)
            self._wdeg[tree] = weighted_degree(g.indptr, g.weight)
        return self._wdeg[tree]

    def lexical(self) -> tuple[np.ndarray, "LexicalIndex"]:
        """The chunks' lexical index (breadcrumb and whole text, code and tables included) and
        the graph index of each of its documents; built on first use, once per snapshot (a few
        seconds for the demo corpus; `IndexHandle.reload` builds it before the swap)."""
        with self._lexical_lock:
            if self._lexical is None:
                from ..kernels.lexical import build_lexical, build_titles, term_presence

                with Store(self.path, readonly=True) as store:
                    rows = store.nodes.texts_of_type("chunk")
                idx = self.index_of(np.array([r for r, *_ in rows], dtype=np.int64))
                keep = np.flatnonzero(idx >= 0)  # the file may be newer than this snapshot
                docs = [f"{rows[i][1]}\n{rows[i][2]}" for i in keep.tolist()]
                index = build_lexical(docs)
                crumbs = [rows[i][1].split(" / ") for i in keep.tolist()]
                # a page's name and a section's own heading, the two titles a passage may mention
                terms = term_presence(index)
                self._titles = (build_titles([c[0] for c in crumbs], index, doc_terms=terms),
                                build_titles([c[-1] for c in crumbs], index, doc_terms=terms))
                lang = np.full(self.n_nodes, "", dtype=object)
                lang[idx[keep]] = [rows[i][3] for i in keep.tolist()]
                self._language = lang
                prose = np.ones(self.n_nodes)
                prose[idx[keep]] = [prose_share(rows[i][2]) for i in keep.tolist()]
                self._prose = prose
                release = np.zeros(self.n_nodes, dtype=bool)
                release[idx[keep]] = release_sections(crumbs, self.page_of()[idx[keep]])
                self._release = release
                self._lexical = (idx[keep], index)
            return self._lexical

    def language(self) -> np.ndarray:
        """Each node's language ('en', 'zh'; '' for all but chunks), read with `lexical`."""
        self.lexical()
        return self._language

    def prose(self) -> np.ndarray:
        """Each chunk's `shape.prose_share` (1 for other nodes), read with `lexical`."""
        self.lexical()
        return self._prose

    def release(self) -> np.ndarray:
        """True for each section of a page of release notes (`shape.release_sections`), read with `lexical`."""
        self.lexical()
        return self._release

    def titles(self) -> tuple["TitleIndex", "TitleIndex"]:
        """The lexical documents' page titles and section headings (built with `lexical`)."""
        self.lexical()
        return self._titles

    def igraph(self, tree: bool = True):
        """An igraph Graph of `walked(tree)`'s edges (built on first use, for PPR comparisons)."""
        if tree not in self._igraph:
            import igraph as ig

            ga = self.walked(tree)
            rows = np.repeat(np.arange(self.n_nodes), np.diff(ga.indptr))
            keep = rows < ga.indices
            g = ig.Graph(n=self.n_nodes, edges=np.column_stack([rows[keep], ga.indices[keep]]).tolist(),
                         directed=False)
            g.es["weight"] = ga.weight[keep].astype(float).tolist()
            self._igraph[tree] = g
        return self._igraph[tree]


GRAPH_KEYS = ("rowids", "node_type", "indptr", "indices", "cost", "weight", "etype", "facts",
              "entity_names", "entity_idx")


class QueryCosines:
    """One question's cosine to the nodes, computed for the nodes asked about and kept.

    It indexes like the array of every node's clipped cosine that it replaces: at 500k nodes
    a question reads a few thousand of them, and that matmul cost more than the rest of
    stage 3 (docs/benchmarks.md, "Stage 3 at scale"). Stage 1's routes fill whole types
    (`of_type`), and stage 3 reuses them."""

    def __init__(self, li: LoadedIndex, qv: np.ndarray):
        self.li, self.qv = li, np.ascontiguousarray(qv, dtype=np.float32).ravel()
        self._raw = np.full(li.n_nodes, np.nan)  # NaN: not computed yet
        self._types: set[str] = set()

    def __getitem__(self, nodes) -> np.ndarray:
        """The clipped cosine of `nodes` (graph indices), 0 for a node without a vector."""
        nodes = np.asarray(nodes, dtype=np.int64)
        raw = self._raw[nodes]
        missing = np.isnan(raw)
        if np.any(missing):
            todo = np.unique(nodes[missing])
            self._raw[todo] = self.li.cosine(self.qv, todo)
            raw = self._raw[nodes]
        return np.maximum(raw, 0.0)

    def of_type(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """(graph indices, cosines, not clipped) of every node of `kind` with a vector, in
        vec_mat's order: one matmul over that type's rows, the first time it is asked."""
        rows = self.li.type_rows(kind)
        if kind not in self._types:
            a, b = self.li.type_slices.get(kind, (0, 0))
            if b > a:
                self._raw[rows] = self.li.vec_mat[a:b] @ self.qv
            self._types.add(kind)
        return rows, self._raw[rows]

    def compute_all(self) -> None:
        """Every node's cosine in one matmul (0 for a node without a vector)."""
        if len(self._types) < len(self.li.type_slices):
            self._raw = self.li.similarity(self.qv)
            self._types.update(self.li.type_slices)

    def lazy(self) -> np.ndarray:
        """Every node's clipped cosine where it is known, NaN where not: the diffusion's
        `node_sim` with `vectors()` (it computes the rest for the nodes it reaches)."""
        return np.maximum(self._raw, 0.0)  # NaN stays NaN

    def vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.li.vec_row(), self.li.vec_mat, self.qv


def load_index(path: Path | str, settings: Settings | None = None) -> LoadedIndex:
    """Everything a query needs, read in one snapshot of the file. The graph comes from the
    persisted snapshot when it matches the file's graph version, else it is rebuilt from the
    edge table (and the snapshot written back, best effort); past `fact_ann_min_vectors` facts,
    the same for the fact route's approximate index (retrieve/fact_ann.py)."""
    settings = settings or Settings()
    t0 = time.perf_counter()
    with Store(path, readonly=True) as store, store.snapshot():
        meta = store.meta.items()
        version = int(meta.get("graph_version", 0))
        blob = store.meta.read_graph_cache(version)
        g = _decode(blob) if blob is not None else _build_graph(store)
        tmp = _Partial(g["rowids"])
        dim = int(meta.get("embedding_dim") or 0)
        vec_idx, vec_mat, type_slices = _node_vectors(store, tmp, dim)
        facts = g["facts"]
        fact_ids, fact_mat = store.vectors.matrix("fact") if dim else (np.zeros(0, np.int64), np.zeros((0, 0), np.float32))
    order = np.argsort(fact_ids)
    pos = np.searchsorted(fact_ids[order], facts[:, 0]) if fact_ids.size else np.zeros(len(facts), np.int64)
    keep = (pos < fact_ids.size) & (fact_ids[order][np.minimum(pos, max(fact_ids.size - 1, 0))] == facts[:, 0]) \
        if fact_ids.size else np.zeros(len(facts), bool)
    fact_vec = fact_mat[order[pos[keep]]] if keep.any() else np.zeros((0, dim), np.float32)
    facts = facts[keep]
    if blob is None:
        _save_graph(path, version, g)
    ga = GraphArrays(g["indptr"], g["indices"], g["cost"], g["weight"], g["etype"], g["node_type"])
    entity_by_name = {str(n): int(i) for n, i in zip(g["entity_names"], g["entity_idx"])}
    fact_ann = fact_search(path, meta, facts[:, 0], fact_vec, settings)
    return LoadedIndex(
        path=Path(path), meta=meta, rowids=g["rowids"], node_type=g["node_type"], ga=ga, vec_idx=vec_idx,
        vec_mat=vec_mat, type_slices=type_slices, fact_rowids=facts[:, 0], fact_head=facts[:, 1],
        fact_tail=facts[:, 2], fact_chunk=facts[:, 3], fact_vec=fact_vec,
        entity_by_name=entity_by_name, load_seconds=time.perf_counter() - t0, fact_search=fact_ann)


def ensure_graph_cache(path: Path | str) -> bool:
    """Persist the graph snapshot if the file lacks a current one, so that copies of the file
    start without rebuilding (or writing) anything; False if it could not be stored (the file
    is busy, read-only, or changed meanwhile). A current one from before names were packed is
    written again packed (what `dgrag snapshot` copies)."""
    with Store(path, readonly=True) as store, store.snapshot():
        version = store.meta.graph_version()
        blob = store.meta.read_graph_cache(version)
        if blob is not None and _packed(blob):
            return True
        g = _decode(blob) if blob is not None else _build_graph(store)
    return _save_graph(path, version, g, timeout=30.0)


def ensure_fact_ann(path: Path | str, settings: Settings) -> str | None:
    """Store the fact route's approximate index in the file if it is due (fact_ann_min_vectors)
    and the file lacks a current one, so that copies of the file start without building it;
    how the fact route of the file will search, or None where it is not due."""
    with Store(path, readonly=True) as store:
        n = store.vectors.counts().get("fact", 0)
    if n < settings.fact_ann_min_vectors:
        return None
    return load_index(path, settings).fact_search.how


def _packed(blob: bytes) -> bool:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return "entity_names_utf8" in z.files


def _build_graph(store: Store) -> dict:
    rowids, node_type = store.nodes.table(NODE_TYPE_CODES)
    tmp = _Partial(rowids)
    src, dst, codes, weight = store.edges.table(EDGE_TYPE_CODES, EDGE_TYPE_CODES["other"])
    s_idx, d_idx = tmp.index_of(src), tmp.index_of(dst)
    ok = (s_idx >= 0) & (d_idx >= 0)
    ga = build_graph_arrays(rowids.size, s_idx[ok], d_idx[ok], codes[ok], weight[ok], node_type)
    raw = np.array(store.semantic.all_facts(), dtype=np.int64).reshape(-1, 4)
    facts = np.column_stack([raw[:, 0], tmp.index_of(raw[:, 1]), tmp.index_of(raw[:, 2]), tmp.index_of(raw[:, 3])])
    names = [(r, n) for r, n in store.semantic.entity_names() if n]
    idx = tmp.index_of(np.array([r for r, _ in names], dtype=np.int64))
    good = idx >= 0
    return {"rowids": rowids, "node_type": node_type, "indptr": ga.indptr, "indices": ga.indices, "cost": ga.cost,
            "weight": ga.weight, "etype": ga.etype, "facts": facts.reshape(-1, 4),
            "entity_names": np.array([n for (_, n), g in zip(names, good) if g], dtype=str),
            "entity_idx": idx[good]}


def _decode(blob: bytes) -> dict:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        if "entity_names_utf8" not in z.files:  # a snapshot written before names were packed
            return {k: z[k] for k in GRAPH_KEYS}
        g = {k: z[k] for k in GRAPH_KEYS if k != "entity_names"}
        raw = z["entity_names_utf8"].tobytes().decode("utf-8", "surrogatepass")
    g["entity_names"] = raw.split("\x00") if raw else []
    return g


def _save_graph(path, version: int, g: dict, timeout: float = 0.5) -> bool:
    """Persist the snapshot for the next start; a read-only or busy file just skips it. Entity
    names go as one UTF-8 buffer: numpy's str array is 4 bytes a character at the longest name's
    width (29 MB of 19k names on MuSiQue, more than the file's float32 fact vectors)."""
    buf = io.BytesIO()
    names = "\x00".join(str(n) for n in g["entity_names"]).encode("utf-8", "surrogatepass")
    np.savez(buf, **{k: g[k] for k in GRAPH_KEYS if k != "entity_names"},
             entity_names_utf8=np.frombuffer(names, dtype=np.uint8))
    try:
        with Store(path, timeout=timeout) as st:  # a load never waits behind a long indexing run
            return bool(st.write_graph_cache(version, buf.getvalue()))
    except Exception:  # noqa: BLE001 - a cache: never worth failing a load for
        return False


def _node_vectors(store: Store, tmp: "_Partial", dim: int):
    """Only the vectors that exist, kind after kind, in one compact matrix (no zero rows)."""
    parts, slices, start = [], {}, 0
    if dim:
        for kind in VECTOR_TYPES:
            if kind == "fact":
                continue
            ids, mat = store.vectors.matrix(kind)
            idx = tmp.index_of(ids)
            good = np.flatnonzero(idx >= 0)
            take = good[np.argsort(idx[good], kind="stable")]  # in graph order
            parts.append((idx[take], mat, take))
            slices[kind] = (start, start + take.size)
            start += take.size
    if not parts:
        return np.zeros(0, np.int64), np.zeros((0, dim), np.float32), {}
    out = np.empty((start, dim), np.float32)  # filled in place: one copy of the vectors, not three
    for (a, b), (_, mat, take) in zip(slices.values(), parts):
        np.take(mat, take, axis=0, out=out[a:b])
    return np.concatenate([p[0] for p in parts]), out, slices


class _Partial:
    """rowid -> graph index lookup before the LoadedIndex exists."""

    def __init__(self, rowids: np.ndarray):
        self.rowids = rowids

    index_of = LoadedIndex.index_of

    @property
    def n_nodes(self) -> int:
        return int(self.rowids.shape[0])


class IndexHandle:
    """The current LoadedIndex of one file; `reload()` builds the next one aside, then swaps.
    `settings` says how a snapshot is loaded (the fact route's approximate index)."""

    def __init__(self, path: Path | str, settings: Settings | None = None):
        self.path = Path(path)
        self.settings = settings or Settings()
        self._lock = threading.Lock()
        self._current: LoadedIndex | None = None
        self.generation = 0  # bumped at every swap: readers reopen their connections

    @property
    def loaded(self) -> LoadedIndex | None:
        """The snapshot in use, or None before the first load (never loads: /health stays cheap)."""
        return self._current

    def get(self) -> LoadedIndex:
        current = self._current
        if current is None:
            with self._lock:
                if self._current is None:
                    self._current = load_index(self.path, self.settings)
                current = self._current
        return current

    def reload(self) -> LoadedIndex:
        fresh = load_index(self.path, self.settings)  # built aside: readers keep using the old one meanwhile
        fresh.lexical()  # by the writer, not by the first question after the swap
        with self._lock:
            self._current = fresh
            self.generation += 1
        return fresh

    def switch(self, path: Path | str) -> LoadedIndex:
        fresh = load_index(path, self.settings)
        fresh.lexical()
        with self._lock:
            self.path, self._current = Path(path), fresh
            self.generation += 1
        return fresh
