"""Indexing and enrichment, once: what `dgrag index`, `dgrag enrich`, the app's Index tab, its
first-start build and the benchmarks all run.

Each function takes an open store and the settings, works in the calling thread (bounded to
the settings' share of the cores when asked) and reports progress through one callback, which
is also where a cancel lands (`Job.on_progress` raises). What it committed stays: a rerun
resumes.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..backends.embedder_choice import embedder_for_store
from ..backends.embedder_cpu import CoreShare, bounded_threads
from ..backends.embedders import SharedCores
from ..config import Settings
from ..embed import Progress, embed_pending
from ..enrich import semantic_layer
from ..enrich.runner import StoreCache, run_step
from ..ingest.pipeline import IndexReport, index_folder
from ..store import Store

STEPS = ("summaries", "captions", "openie")


def open_llm(settings: Settings, store: Store):
    """The enrichment LLM with the index file as its cache, or None when none is configured
    (`Settings.llm_configured` decides, here as everywhere)."""
    if not settings.llm_configured:
        return None
    from ..backends.llm import LLM

    return LLM.from_settings(settings, StoreCache(store))


Threads = int | CoreShare | None  # the engine threads: a count (0 = all), one per batch, or the settings'


def _embedder(settings: Settings, store: Store, threads: Threads):
    """The file's model and the thread count to start with; a `CoreShare` re-decides per batch."""
    embedder = embedder_for_store(settings, store)  # another model asked for is refused
    if isinstance(threads, CoreShare):
        return SharedCores(embedder, threads), threads.now()
    return embedder, settings.index_threads if threads is None else threads


def index_docs(settings: Settings, store: Store, *, embed: bool = True, progress: Progress | None = None,
               pages: list[str] | None = None, threads: Threads = None) -> IndexReport:
    """Parse the docs folder (`settings.docs_root`, or the explicit `pages` of it) into the
    store, then embed what has no current vector with the file's model."""
    embedder, n = _embedder(settings, store, threads) if embed else (None, 0)
    with bounded_threads(n):
        return index_folder(settings, store, embedder, progress, pages)


def embed_nodes(settings: Settings, store: Store, kinds: tuple[str, ...], *, progress: Progress | None = None,
                threads: Threads = None) -> int:
    """Embed the nodes of `kinds` that have no current vector (the batched build's stages:
    file and chunk vectors first, code, tables and images after). Returns the texts embedded."""
    embedder, n = _embedder(settings, store, threads)
    store.bind_embedder(embedder.model_id, embedder.dim)
    with bounded_threads(n):
        return embed_pending(store, embedder, settings, progress, kinds)


def offline_layer(settings: Settings, store: Store, *, progress: Progress | None = None,
                  cancel: threading.Event | None = None, threads: Threads = None, limit: int | None = None) -> dict:
    """The semantic layer without an LLM, for what is not done yet: offline summaries and
    captions, heuristic OpenIE (entities, facts), then edges, entity and fact vectors and
    synonymy. What the first start's build runs once every page is in, a slice (`limit` nodes
    per step, in page order) at a time."""
    return enrich_index(settings, store, STEPS, llm=None, progress=progress, cancel=cancel, threads=threads,
                        limit=limit).as_dict()


@dataclass
class EnrichReport:
    steps: dict[str, dict] = field(default_factory=dict)
    semantic_layer: dict = field(default_factory=dict)
    llm_calls: int = 0

    def as_dict(self) -> dict:
        return {**self.steps, "semantic_layer": self.semantic_layer, "llm_calls": self.llm_calls}


def enrich_index(settings: Settings, store: Store, steps=STEPS, *, llm="auto", progress: Progress | None = None,
                 cancel: threading.Event | None = None, max_workers: int | None = None, retry_failed: bool = False,
                 limit: int | None = None, dry_run: bool = False, semantic: bool = True,
                 threads: Threads = None) -> EnrichReport:
    """Run enrichment steps (an LLM when one is configured and `llm` is "auto", else the
    offline path), then bring the semantic layer in line (edges, vectors, synonymy) unless
    `dry_run` or not `semantic`. `steps` may be empty: the semantic layer alone (synonymy)."""
    embedder, n = _embedder(settings, store, threads)
    llm = open_llm(settings, store) if llm == "auto" else llm
    out = EnrichReport()
    for step in steps:
        rep = run_step(store, settings, step, llm, max_workers=max_workers or settings.max_workers,
                       retry_failed=retry_failed, limit=limit, dry_run=dry_run, progress=progress, cancel=cancel)
        out.steps[step] = {k: getattr(rep, k) for k in ("total", "done", "cached", "offline", "failed", "seconds",
                                                         "est_tokens")}
        out.steps[step]["failures"] = rep.failures[:20]
        if dry_run:
            out.steps[step]["sample"] = rep.dry_run
    if semantic and not dry_run:
        with bounded_threads(n):
            out.semantic_layer = semantic_layer.finalize(store, settings, embedder, progress)
    out.llm_calls = llm.calls if llm is not None else 0
    return out


def docs_settings(settings: Settings, docs: Path, url_template: str = "", include: str = "") -> Settings:
    """The settings for indexing `docs`, with its URL template and page globs."""
    import dataclasses

    return dataclasses.replace(settings, docs_root=Path(docs), url_template=url_template, include=include)
