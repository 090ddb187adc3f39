"""Stages 1 and 2: multi-route vector recall, exact entity match, rerank."""
from __future__ import annotations

import re
import numpy as np

from ..core import Route
from ..enrich.heuristic_openie import normalize_entity
from ..kernels.knn import topk
from ..kernels.scaling import onto
from ..kernels.tokens import IDEOGRAPH, IDEOGRAPHS
from . import fact_ann
from .loaded import LoadedIndex, QueryCosines

_TERM = re.compile(f"@?[A-Za-z_][\\w.\\-]*(?:\\(\\))?|[{IDEOGRAPHS}]+")
# a question's candidate entity names: runs of up to MAX_NAME_WORDS words, and (CJK has no spaces)
# every substring of CJK_NAME_CHARS characters; bounded, so that a long question costs a few
# hundred dictionary look-ups, not a number that grows with its square
MAX_NAME_WORDS = 4
CJK_NAME_CHARS = (2, 12)
# names shorter than this match by accident (a letter, `id`, `ui`): CJK names from 2 characters,
# others from 3
MIN_NAME_CHARS, MIN_ASCII_NAME_CHARS = 2, 3
EXACT_ENTITIES = 20  # entities matched by name that seed stage 3 (the longest names first)


def recall_nodes(li: LoadedIndex, qv: np.ndarray, kind: str, k: int, cos: QueryCosines | None = None) -> Route:
    """The k nodes of `kind` nearest the question; `cos` keeps the type's cosines for stage 3."""
    a, b = li.type_slices.get(kind, (0, 0))
    if b <= a or k <= 0:
        return Route(kind, np.zeros(0, np.int64), np.zeros(0, np.float32))
    sims = li.vec_mat[a:b] @ qv if cos is None else cos.of_type(kind)[1].astype(np.float32)
    pos, vals = topk(sims, k)
    return Route(kind, li.vec_idx[a:b][pos], vals)


def recall_nodes_sqlite_vec(store, li: LoadedIndex, qv: np.ndarray, kind: str, k: int) -> Route:
    """The same route through the file's vec0 table (nodes unknown to the snapshot dropped)."""
    hits = store.vectors.knn(kind, qv, k)
    idx = li.index_of(np.array([r for r, _ in hits], dtype=np.int64))
    sims = np.array([s for _, s in hits], dtype=np.float32)
    keep = idx >= 0
    return Route(kind, idx[keep], sims[keep])


def recall_facts(li: LoadedIndex, qv: np.ndarray, k: int, ann_breadth: int = 0) -> Route:
    """The k facts nearest the question: through the snapshot's approximate index when it has
    one and `ann_breadth` > 0 (its candidates rescored exactly), else over every fact vector."""
    if li.fact_vec.shape[0] == 0 or k <= 0:
        return Route("fact", np.zeros(0, np.int64), np.zeros(0, np.float32))
    found = fact_ann.recall(li.fact_search, li.fact_vec, qv, k, ann_breadth)
    pos, vals = found if found is not None else topk(li.fact_vec @ qv, k)
    return Route("fact", pos.astype(np.int64), vals)


def query_terms(query: str) -> list[str]:
    """Candidate entity names in a question: identifiers, decorators, API names, word
    n-grams (1 to MAX_NAME_WORDS), and CJK substrings (CJK_NAME_CHARS)."""
    terms: list[str] = []
    tokens = _TERM.findall(query)
    for i, tok in enumerate(tokens):
        if IDEOGRAPH.match(tok):
            n = len(tok)
            shortest, longest = CJK_NAME_CHARS
            terms += [tok[a:b] for a in range(n) for b in range(a + shortest, min(n, a + longest) + 1)]
            continue
        for j in range(i + 1, min(len(tokens), i + MAX_NAME_WORDS) + 1):
            terms.append(" ".join(tokens[i:j]))
        if tok.endswith("()"):
            terms.append(tok[:-2])
    return terms


def match_entities(li: LoadedIndex, query: str, limit: int = EXACT_ENTITIES) -> list[int]:
    """NodeRAG's accurate search: entity nodes whose normalised name is a term of the query.
    Longer names first (more specific); single letters and stop-length names are ignored."""
    found: dict[int, int] = {}
    for term in query_terms(query):
        norm = normalize_entity(term)
        if len(norm) < MIN_NAME_CHARS or (norm.isascii() and len(norm) < MIN_ASCII_NAME_CHARS):
            continue
        idx = li.entity_by_name.get(norm)
        if idx is not None:
            found[idx] = max(found.get(idx, 0), len(norm))
    return [i for i, _ in sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))][:limit]


def rerank(route: Route, query: str, texts: list[str], reranker, k: int) -> Route:
    """Stage 2: rescore the route's candidates and keep the top k."""
    if route.positions.size == 0:
        return route
    scores = reranker.score(query, texts, route.cosine)
    return Route(route.kind, route.positions, route.cosine, np.asarray(scores, dtype=np.float64)).top(k)


def on_cosine_scale(route: Route) -> np.ndarray:
    """Map rerank scores onto the route's cosine range, so reranked candidates and nodes
    reached through the graph (scored by cosine) compare on one scale."""
    if route.positions.size == 0:
        return np.zeros(0)
    return onto(route.score, float(route.cosine.min()), float(route.cosine.max()))
