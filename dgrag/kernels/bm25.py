"""The stage-2 reranker's lexical side: BM25 (Okapi, rank-bm25) of the question over the dense
candidates, over `tokens.whole_tokens` (identifiers whole, CJK unigrams and bigrams), fused
with their cosine by min-max.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from .scaling import minmax
from .tokens import whole_tokens


def bm25_scores(query: str, docs: Sequence[str]) -> np.ndarray:
    """BM25Okapi score of `query` against each doc (float64); zeros when nothing to score."""
    toks = [whole_tokens(d) for d in docs]
    q = whole_tokens(query)
    if not q or not any(toks):  # BM25Okapi divides by the mean doc length
        return np.zeros(len(docs), dtype=np.float64)
    return np.asarray(BM25Okapi(toks).get_scores(q), dtype=np.float64)


def fuse(cosine: np.ndarray, bm25: np.ndarray, alpha: float = 0.7) -> np.ndarray:
    """alpha * minmax(cosine) + (1 - alpha) * minmax(bm25); a constant side (no query term in any
    candidate) adds the same to every candidate, so the other side alone ranks them."""
    cosine = np.asarray(cosine, dtype=np.float64)
    bm25 = np.asarray(bm25, dtype=np.float64)
    if cosine.shape != bm25.shape:
        raise ValueError("cosine and bm25 must have the same shape")
    return alpha * minmax(cosine) + (1.0 - alpha) * minmax(bm25)
