"""Rerankers: score (query, candidate text) pairs.

- `fusion` (offline default): dense cosine fused with BM25 over the candidates (`kernels.bm25`, whole identifiers);
- `cosine`: the dense cosine alone;
- `flag`: FlagEmbedding's FlagReranker (e.g. bge-reranker-v2-m3) from a local folder;
- `cross-encoder`: sentence-transformers CrossEncoder from a local folder.
No trained cross-encoder ships on PyPI, so the last two need `rerank_model_path`.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from ..config import Settings
from ..errors import ConfigError
from ..kernels.bm25 import bm25_scores, fuse
from . import load_local_model


class Reranker:
    name = "base"

    def score(self, query: str, texts: Sequence[str], cosine: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class CosineReranker(Reranker):
    name = "cosine"

    def score(self, query, texts, cosine):
        return np.asarray(cosine, dtype=np.float64)


class FusionReranker(Reranker):
    name = "fusion"

    def __init__(self, alpha: float = 0.7):
        self.alpha = alpha

    def score(self, query, texts, cosine):
        if len(texts) == 0:
            return np.zeros(0)
        return fuse(np.asarray(cosine, dtype=np.float64), bm25_scores(query, list(texts)), self.alpha)


class FlagRerankerBackend(Reranker):
    name = "flag"

    def __init__(self, path: str):
        self._model = load_local_model("FlagEmbedding", "FlagReranker", path, "FlagEmbedding",
                                       use_fp16=False, devices="cpu")
        self._lock = threading.Lock()

    def score(self, query, texts, cosine):
        if not texts:
            return np.zeros(0)
        with self._lock:
            out = self._model.compute_score([[query, t] for t in texts], normalize=True)
        return np.atleast_1d(np.asarray(out, dtype=np.float64))


class CrossEncoderReranker(Reranker):
    name = "cross-encoder"

    def __init__(self, path: str):
        self._model = load_local_model("sentence_transformers", "CrossEncoder", path, "sentence-transformers",
                                       device="cpu")

    def score(self, query, texts, cosine):
        if not texts:
            return np.zeros(0)
        return np.asarray(self._model.predict([(query, t) for t in texts]), dtype=np.float64)


_CACHE: dict[tuple, Reranker] = {}


def make_reranker(settings: Settings, backend: str | None = None) -> Reranker:
    backend = backend or settings.rerank_backend
    key = (backend, settings.rerank_model_path)
    if key not in _CACHE:
        if backend == "fusion":
            _CACHE[key] = FusionReranker()
        elif backend == "cosine":
            _CACHE[key] = CosineReranker()
        elif backend in ("flag", "cross-encoder"):
            if not settings.rerank_model_path:
                raise ConfigError(f"the {backend} reranker needs rerank_model_path (a local model folder)")
            cls = FlagRerankerBackend if backend == "flag" else CrossEncoderReranker
            _CACHE[key] = cls(settings.rerank_model_path)
        else:
            raise ConfigError(f"unknown rerank backend {backend!r} (fusion, cosine, flag, cross-encoder)")
    return _CACHE[key]
