"""The stage-2 reranker's lexical side: BM25 of the question over the dense candidates alone,
fused with their cosine.

One BM25: the corpus-wide index of `kernels.lexical`, built here over the candidates (so IDF
is theirs: a term every candidate holds adds nothing), over the one tokenizer of
`kernels.tokens` (identifiers whole plus their parts, CJK bigrams).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .lexical import build_lexical
from .scaling import minmax


def bm25_scores(query: str, docs: Sequence[str]) -> np.ndarray:
    """BM25 of `query` against each doc (float64); zeros where no query term is in a doc."""
    if len(docs) == 0:
        return np.zeros(0, dtype=np.float64)
    return build_lexical(docs).scores(query).astype(np.float64)


def fuse(cosine: np.ndarray, bm25: np.ndarray, alpha: float = 0.7) -> np.ndarray:
    """alpha * minmax(cosine) + (1 - alpha) * minmax(bm25); a constant side (no query term in any
    candidate) adds the same to every candidate, so the other side alone ranks them."""
    cosine = np.asarray(cosine, dtype=np.float64)
    bm25 = np.asarray(bm25, dtype=np.float64)
    if cosine.shape != bm25.shape:
        raise ValueError("cosine and bm25 must have the same shape")
    return alpha * minmax(cosine) + (1.0 - alpha) * minmax(bm25)
