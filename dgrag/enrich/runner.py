"""Run enrichment steps over the index with a worker pool: resumable, cached, never lossy.

Workers only talk to the LLM; every write happens on the calling thread, one item per
transaction, so an interrupted run keeps what it finished and resumes with the rest.
Each item ends as `done` (LLM), `offline` (heuristic, no LLM configured) or `failed`
(with the reason); `--retry-failed` takes the failed ones again.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable

from ..config import Settings
from ..core import Node
from ..errors import ConfigError, DgragError
from ..store import Store
from ..ingest import context
from .steps import STEPS, Step, input_hash

Progress = Callable[[str, int, int], None]


@dataclass
class StepReport:
    step: str
    total: int = 0
    done: int = 0
    cached: int = 0
    offline: int = 0
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0  # the work on the items, after they are listed
    dry_run: list[dict] = field(default_factory=list)
    est_tokens: int = 0

    @property
    def rate(self) -> float:
        return (self.done + self.offline + self.failed) / self.seconds if self.seconds else 0.0


class StoreCache:
    """The `llm_cache` table as the LLM's cache."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: str) -> str | None:
        with self.store.write_lock:
            return self.store.logs.cache_get(key)

    def put(self, key: str, model: str, response: str) -> None:
        with self.store.write_lock:  # worker threads share the connection
            self.store.logs.cache_put(key, model, response)


@dataclass(frozen=True)
class PendingItem:
    """A node a step has still to do, and the hash of its input as the step reads it now (logged
    with the outcome, so an unchanged input is not done again)."""

    node: Node
    input_hash: str


def pending_items(store: Store, step: Step, *, retry_failed: bool, use_llm: bool,
                  limit: int | None, context_lines: int = 15, redo_offline: bool = False) -> list[PendingItem]:
    """The nodes a step has still to do. `redo_offline`: also those done offline (what the offline
    step knows of the corpus changed)."""
    status = store.logs.enrich_status(step.name)
    out = []
    nodes = store.nodes.by_rowids(store.nodes.of_type(step.kinds))
    context.attach(store, nodes, context_lines)  # code and tables: the text around them, derived
    for node in nodes:
        if step.name == "openie" and len(step.inputs(node).strip()) < 20:
            continue
        have = status.get(node["rowid"])
        h = input_hash(step.name, step.inputs(node))
        if retry_failed:
            todo = have is not None and have[0] == "failed"
        else:
            todo = have is None or have[1] != h or ((use_llm or redo_offline) and have[0] == "offline")
        if todo:
            out.append(PendingItem(node, h))
            if limit and len(out) >= limit:
                break
    return out


def run_step(store: Store, settings: Settings, step_name: str, llm=None, *, max_workers: int | None = None,
             retry_failed: bool = False, limit: int | None = None, dry_run: bool = False,
             progress: Progress | None = None, cancel: threading.Event | None = None) -> StepReport:
    if step_name not in STEPS:
        raise ConfigError(f"unknown step {step_name!r} (summaries, captions, openie)")
    step = STEPS[step_name]
    use_llm = llm is not None and llm.configured
    corpus, knowledge, changed = None, None, False
    if not use_llm and not dry_run and step.offline_knowledge is not None:
        corpus = store.nodes.by_rowids(store.nodes.of_type(step.kinds))
        knowledge, changed = step.offline_knowledge(store, corpus, settings)
    items = pending_items(store, step, retry_failed=retry_failed, use_llm=use_llm, limit=limit,
                          context_lines=settings.context_lines, redo_offline=changed)
    report = StepReport(step_name, total=len(items))
    progress = progress or (lambda s, d, t: None)
    t0 = time.perf_counter()
    if dry_run:
        _dry_run(step, items, report)
    elif not use_llm:
        offline = step.offline
        if step.offline_for_corpus is not None and items:
            corpus = corpus if corpus is not None else store.nodes.by_rowids(store.nodes.of_type(step.kinds))
            offline = step.offline_for_corpus(corpus, settings, knowledge)
        for i, item in enumerate(items):
            _apply(store, step, item, offline(item.node), "offline", report)
            progress(step_name, i + 1, len(items))
    else:
        _run_pool(store, settings, step, llm, items, report, max_workers, progress, cancel)
    report.seconds = time.perf_counter() - t0
    return report


def _dry_run(step: Step, items: list[PendingItem], report: StepReport) -> None:
    for node in (item.node for item in items):
        text = step.inputs(node)
        report.est_tokens += len(text) // 3 + 200  # rough: ~3 chars a token, plus the prompt
        if len(report.dry_run) < 20:
            report.dry_run.append({"id": node["id"], "type": node["type"], "input": text[:300]})


def _apply(store: Store, step: Step, item: PendingItem, result, source: str, report: StepReport) -> None:
    with store.transaction():
        step.apply(store, item.node, result, source)
        store.logs.log_enrich(item.node["rowid"], step.name, "done" if source == "llm" else "offline", "", 1,
                              item.input_hash)
    if source == "llm":
        report.done += 1
    else:
        report.offline += 1


def _fail(store: Store, step: Step, item: PendingItem, reason: str, report: StepReport) -> None:
    with store.transaction():
        store.logs.log_enrich(item.node["rowid"], step.name, "failed", reason, 1, item.input_hash)
    report.failed += 1
    report.failures.append((item.node["id"], reason))


def _run_pool(store, settings, step, llm, items, report, max_workers, progress, cancel) -> None:
    workers = max(1, max_workers or settings.max_workers)
    hits_at_start = llm.cache_hits
    pending = iter(items)
    finished = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"enrich-{step.name}") as pool:
        running = {}

        def submit_next() -> bool:
            item = next(pending, None)
            if item is None or (cancel is not None and cancel.is_set()):
                return False
            node = item.node
            kwargs = {"image": store.images.data(node["meta"].get("sha", ""))} if step.name == "captions" else {}
            running[pool.submit(step.ask, llm, node, **kwargs)] = item
            return True

        for _ in range(workers * 2):  # keep the pool fed, bounded memory
            if not submit_next():
                break
        while running:
            done_set, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done_set:
                item = running.pop(fut)
                try:
                    _apply(store, step, item, fut.result(), "llm", report)
                except DgragError as exc:
                    _fail(store, step, item, str(exc), report)
                except Exception as exc:  # noqa: BLE001 - recorded, never dropped
                    _fail(store, step, item, f"{type(exc).__name__}: {exc}", report)
                finished += 1
                progress(step.name, finished, len(items))
                submit_next()
    report.cached = llm.cache_hits - hits_at_start
