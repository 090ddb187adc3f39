"""CJK-aware tokenisation, BM25 scoring and min-max score fusion for the offline reranker.

CJK text has no spaces, so runs of CJK characters yield unigrams and bigrams; ASCII
identifiers stay whole (API names like `router.pushUrl` are the query) plus their parts.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from .scaling import minmax

# Either a run of CJK ideographs or a run of identifier characters; all else separates.
_TOKEN_RE = re.compile(r"(?P<cjk>[\u3400-\u9fff\uf900-\ufaff]+)|(?P<word>[a-z0-9_@.]+)")
_PART_SPLIT_RE = re.compile(r"[.@]+")


def _word_tokens(word: str) -> list[str]:
    word = word.strip(".")  # sentence dots are punctuation, inner dots are member access
    if not re.search(r"[a-z0-9]", word):
        return []
    parts = [p for p in _PART_SPLIT_RE.split(word) if re.search(r"[a-z0-9]", p)]
    return [word] + [p for p in parts if p != word]


def _cjk_tokens(run: str) -> list[str]:
    return list(run) + [run[i:i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Lowercased tokens: identifiers whole + parts, CJK unigrams + bigrams, no punctuation."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text.lower()):
        if m.group("cjk"):
            out.extend(_cjk_tokens(m.group("cjk")))
        else:
            out.extend(_word_tokens(m.group("word")))
    return out


def bm25_scores(query: str, docs: Sequence[str]) -> np.ndarray:
    """BM25Okapi score of `query` against each doc (float64); zeros when nothing to score."""
    toks = [tokenize(d) for d in docs]
    q = tokenize(query)
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
