"""The first start's build: the demo index in steps, each one usable as soon as it commits.

Coverage first: every page becomes answerable before any page gets its expensive extras.
1. *pages*: the pages in batches, each parsed with its file and chunk vectors (what dense recall
   and the diffusion's seeds read), useful early first (getting started, then the guides, then
   the API reference; a page's English and Chinese copies side by side);
2. *code, tables and images*: their vectors, for every page at once;
3. *semantic layer*: the offline layer (heuristic OpenIE, facts, entity vectors, synonymy) a
   slice of chunks at a time, in page order, its stop-entities learnt from the whole corpus.
After each step the app's `after` hook reloads the graph. The steps done are recorded in the
file's meta under the plan's hash: a restart goes on from the first step not recorded (an
incremental index run re-checks every earlier page, so nothing is lost and nothing is redone).

It runs in one background thread at a lower CPU priority (nice +10). Its embedder takes every
core while no question comes and half of them while questions come (`CoreShare`, decided per
batch; or a fixed `Settings.background_index_threads`), so questions keep theirs.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..backends.embedder_cpu import CoreShare
from ..config import Settings
from ..errors import DgragError
from ..ingest.pipeline import site_pages
from ..ingest.site import Site, detect_site
from ..store import Store
from .indexing import docs_settings, embed_nodes, index_docs, offline_layer
from .jobs import Job, JobCancelled, Writer

# (what answers cover once these pages are in, the globs that pick them); first match wins
GROUPS = (
    ("getting started", ("README*.md", "*/README.md", "*/glossary.md", "*/application-dev/README.md",
                         "*/application-dev/application-dev-guide.md", "*/application-dev/quick-start/*",
                         "*/application-dev/tutorial/*", "*/application-dev/tools/*")),
    ("guides", ("*/application-dev/*", "*/framework-dev/*")),
    ("API reference", ("*/application-dev/reference/*",)),
    ("release notes and the rest", ("*",)),
)
META_KEY = "first_build"
PAGES, MEDIA, SEMANTIC = "pages", "code, tables and images", "semantic layer"  # the stages, in order
PAGE_KINDS, MEDIA_KINDS = ("file", "chunk"), ("code", "table", "image")


def _group(path: str) -> int:
    if fnmatch.fnmatchcase(path, GROUPS[2][1][0]):
        return 2  # the reference (its READMEs too) is under application-dev: it waits for its own turn
    return next((i for i, (_, globs) in enumerate(GROUPS) if any(fnmatch.fnmatchcase(path, g) for g in globs)),
                len(GROUPS) - 1)


@dataclass(frozen=True)
class Batch:
    number: int  # 1-based
    pages: tuple[str, ...]
    groups: tuple[str, ...]  # the groups its pages belong to


def demo_batches(pages: list[str], batch_pages: int, first_pages: int | None = None) -> list[Batch]:
    """`pages` in the order that is useful early, cut into batches of `batch_pages`; the first
    batch is smaller (`first_pages`, a quarter by default) so that the first answers come soon."""
    def key(p: str) -> tuple:
        lang, _, rest = p.partition("/")
        toc = p.rsplit("/", 1)[-1].startswith("README")  # tables of contents answer little: last in their group
        return (_group(p), toc, rest if rest else p, lang)  # a page's en and zh-cn copies together

    ordered = sorted(pages, key=key)
    size = max(1, batch_pages)
    first = max(1, size // 4 if first_pages is None else first_pages)
    cuts = [0, *range(first, len(ordered), size), len(ordered)] if ordered else []
    out = []
    for a, b in zip(cuts, cuts[1:]):
        part = tuple(ordered[a:b])
        groups = tuple(dict.fromkeys(GROUPS[_group(p)][0] for p in part))
        out.append(Batch(len(out) + 1, part, groups))
    return out


@dataclass(frozen=True)
class Step:
    """One unit of the build, committed and recorded on its own."""
    number: int  # 1-based, over all stages
    stage: str  # PAGES, MEDIA or SEMANTIC
    batch: Batch | None  # the pages it covers (None: every page, MEDIA)


def build_steps(batches: list[Batch]) -> list[Step]:
    """Coverage first: every batch's pages, then everything's code, tables and images, then the
    semantic layer batch by batch."""
    plan = [(PAGES, b) for b in batches] + ([(MEDIA, None)] if batches else []) + [(SEMANTIC, b) for b in batches]
    return [Step(i + 1, stage, b) for i, (stage, b) in enumerate(plan)]


@dataclass
class BuildStatus:
    pages_total: int = 0
    pages_done: int = 0  # answerable: parsed, with file and chunk vectors
    batches_total: int = 0  # steps, over all stages
    batches_done: int = 0
    covered: dict[str, tuple[int, int]] = field(default_factory=dict)  # group -> (pages done, pages)
    stages: dict[str, tuple[int, int]] = field(default_factory=dict)  # stage -> (pages it covers, pages)
    running: bool = False
    error: str = ""
    seconds: float = 0.0
    stage: str = ""
    title: str = "the demo index"

    @property
    def finished(self) -> bool:
        return self.batches_total > 0 and self.batches_done == self.batches_total

    def as_dict(self) -> dict:
        return {**self.__dict__, "pages_left": self.pages_total - self.pages_done, "finished": self.finished}

    def banner(self) -> str:
        """One line for the UI: pages done and left, what answers cover so far, each stage's pages."""
        if self.finished or not self.batches_total:
            return ""
        cover = ", ".join(f"{g} {d}/{t}" for g, (d, t) in self.covered.items() if d) or "nothing yet"
        later = "; ".join(f"{s} {d}/{t} pages" for s, (d, t) in self.stages.items() if s != PAGES)
        state = f"failed: {self.error}" if self.error else ("indexing" if self.running else "paused")
        now = f" · now: {self.stage}" if self.stage and self.running else ""
        return (f"**Building {self.title}** ({state}): {self.pages_done} of {self.pages_total} pages done, "
                f"{self.pages_total - self.pages_done} left. Answers cover: {cover}; {later}{now}.")


class Progressive:
    """The batched build of one docs folder into the settings' index file."""

    def __init__(self, settings: Settings, docs: Path, url_template: str, writer: Writer, include: str = "",
                 title: str = "the demo index"):
        self.settings = docs_settings(settings, docs, url_template, include)
        self.writer = writer
        site = detect_site(Path(docs), settings.site, settings.site_url) if Path(docs).is_dir() else Site()
        pages, _ = site_pages(Path(docs), site, include)  # a docs site's own pages, as `dgrag index` reads them
        self.batches = demo_batches(pages, settings.background_batch_pages)
        self.steps = build_steps(self.batches)
        self.plan = hashlib.sha256("\n".join(p for b in self.batches for p in b.pages).encode()).hexdigest()[:16]
        self._status = BuildStatus(pages_total=len(pages), batches_total=len(self.steps), title=title)
        self._thread: threading.Thread | None = None
        self.stop = threading.Event()
        self._count_done(self.recorded())

    # ---- what is done ---------------------------------------------------------------------
    def record(self) -> dict:
        """What the file records of the last batched build into it ({} when nothing)."""
        if not Path(self.settings.db_path).exists():
            return {}
        try:
            with Store(self.settings.db_path, readonly=True) as st:
                raw = st.meta.get(META_KEY)
            rec = json.loads(raw) if raw else {}
        except (DgragError, ValueError):
            return {}
        return rec if isinstance(rec, dict) else {}

    def recorded(self) -> int:
        """Steps the file records as done under this plan (0 for a new or another plan). A
        record from before the stages counted batches that each had everything: its k batches
        are this plan's first k steps, and all of them, all steps."""
        rec = self.record()
        if rec.get("plan") != self.plan:
            return 0
        done = int(rec.get("batches_done", 0))
        if "stages" not in rec and done == len(self.batches):
            return len(self.steps)
        return min(done, len(self.steps))

    def builds_this_file(self) -> bool:
        """The file's last batched build was of this folder (a record from before folders were
        recorded was the demo's, the only batched build then)."""
        rec = self.record()
        return bool(rec) and rec.get("docs") in (None, str(self.settings.docs_root))

    def _count_done(self, n: int) -> None:
        st = self._status
        st.batches_done = n
        done = self.steps[:n]
        pages_of = {stage: sum(len(s.batch.pages) if s.batch else st.pages_total for s in done if s.stage == stage)
                    for stage in (PAGES, MEDIA, SEMANTIC)}
        st.pages_done = pages_of[PAGES]
        st.stages = {stage: (d, st.pages_total) for stage, d in pages_of.items()}
        in_batches = sum(1 for s in done if s.stage == PAGES)
        totals: dict[str, list[int]] = {g: [0, 0] for g, _ in GROUPS}
        for b in self.batches:
            for p in b.pages:
                g = GROUPS[_group(p)][0]
                totals[g][1] += 1
                totals[g][0] += b.number <= in_batches
        st.covered = {g: (d, t) for g, (d, t) in totals.items() if t}

    def mark_done(self, store: Store) -> None:
        """Record every step as done (a shipped index brought up to date: `shipped.refresh`)."""
        with store.transaction():
            store.meta.set(META_KEY, json.dumps({"plan": self.plan, "batches_done": len(self.steps),
                                                 "batches": len(self.steps), "stages": True,
                                                 "docs": str(self.settings.docs_root)}))
        self._count_done(len(self.steps))

    def start_over(self) -> None:
        """Go through every step again (a folder re-indexed after edits: unchanged pages cost a
        hash check); an unfinished build resumes instead."""
        if self.finished:
            self._count_done(0)

    def status(self) -> BuildStatus:
        return self._status

    @property
    def finished(self) -> bool:
        return self._status.finished

    # ---- running ----------------------------------------------------------------------------
    def start(self) -> threading.Thread:
        """Run the remaining steps in a background thread (a lower CPU priority, a bounded
        share of the embedder's threads)."""
        self._thread = threading.Thread(target=self.run, name="dgrag-first-build", daemon=True)
        self._thread.start()
        return self._thread

    def run(self, max_batches: int | None = None) -> BuildStatus:
        """Run the steps not done yet (at most `max_batches` of them), in the calling thread."""
        from ..backends.embedder_cpu import lower_priority

        lower_priority(10)  # this thread and the engine threads it starts: questions get the CPU first
        threads = self.settings.background_index_threads or self.core_share()
        st = self._status
        st.running, t0 = True, time.perf_counter()
        try:
            for step in self.steps[st.batches_done:][:max_batches]:
                if self.stop.is_set():
                    break
                job = self.writer.run(f"first build: {self._name(step)}",
                                      lambda j, s=step: self._one_step(j, s, threads), wait=True)
                if job.error:
                    st.error = job.error
                    break
                self._count_done(step.number)
        finally:
            st.running, st.stage = False, ""
            st.seconds = time.perf_counter() - t0
        return st

    def core_share(self) -> CoreShare:
        """Every core while no question comes; half of them while questions come."""
        cores = os.cpu_count() or 2
        return CoreShare(busy=max(1, cores // 2), idle=cores, quiet_s=self.settings.background_quiet_s)

    def run_in(self, job: Job) -> dict:
        """Run the steps not done yet inside `job`, which already holds the writer (the Index
        tab's "index this folder"): questions see each step as it commits, a cancel lands
        between texts, and a rerun resumes from the first step not done."""
        threads = self.settings.background_index_threads or self.core_share()
        st = self._status
        st.running, t0, before = True, time.perf_counter(), st.batches_done
        totals: dict[str, int] = {"files_indexed": 0, "embedded": 0}
        try:
            for step in self.steps[st.batches_done:]:
                counts = self._one_step(job, step, threads)
                for k in totals:
                    totals[k] += counts.get(k, 0)
                self._count_done(step.number)
                self.writer.after()  # reload: questions see this step
        except JobCancelled:
            raise  # paused: a rerun resumes
        except Exception as exc:
            st.error = str(exc)
            raise
        finally:
            st.running, st.stage = False, ""
            st.seconds = time.perf_counter() - t0
        return {"pages": st.pages_total, "batches_done_before": before, "batches": len(self.batches),
                "steps": st.batches_total, **totals}

    def _name(self, step: Step) -> str:
        part = f" {step.batch.number} of {len(self.batches)}" if step.batch else ""
        return f"{step.stage}{part}"

    def _one_step(self, job: Job, step: Step, threads: int | CoreShare) -> dict:
        def progress(stage: str, done: int, total: int) -> None:
            if self.stop.is_set():
                raise JobCancelled(job.name)
            self._status.stage = f"{self._name(step)}: {stage} {done}/{total}"
            job.on_progress(stage, done, total)

        with Store(self.settings.db_path) as store:
            if step.stage == PAGES:
                counts = self._pages(store, step.batch, progress, threads)
            elif step.stage == MEDIA:
                counts = {"embedded": embed_nodes(self.settings, store, MEDIA_KINDS, progress=progress,
                                                  threads=threads)}
            else:
                counts = self._semantic(store, step.batch, progress, threads)
            with store.transaction():
                store.meta.set(META_KEY, json.dumps({"plan": self.plan, "batches_done": step.number,
                                                     "batches": len(self.steps), "stages": True,
                                                     "docs": str(self.settings.docs_root)}))
        return counts

    def _pages(self, store: Store, batch: Batch, progress, threads) -> dict:
        """Parse the pages up to this batch; embed their files and chunks only."""
        upto = [p for b in self.batches[:batch.number] for p in b.pages]
        # later pages the file holds already stay (re-indexing a folder does not drop what
        # questions can reach; an unchanged page costs a hash check): the index holds these
        known = store.logs.files()
        later = [p for b in self.batches[batch.number:] for p in b.pages if p in known]
        report = index_docs(self.settings, store, embed=False, pages=upto + later, progress=progress)
        embedded = embed_nodes(self.settings, store, PAGE_KINDS, progress=progress, threads=threads)
        return {"pages": len(batch.pages), "files_indexed": report.files_indexed, "embedded": embedded}

    def _semantic(self, store: Store, batch: Batch, progress, threads) -> dict:
        """The offline semantic layer for about this batch's chunks (the pending ones come in page
        order; the last batch takes whatever is left)."""
        last = batch.number == len(self.batches)
        limit = None if last else max(1, store.nodes.count_of_pages(list(batch.pages), "chunk"))
        layer = offline_layer(self.settings, store, progress=progress, threads=threads, limit=limit)
        return {"pages": len(batch.pages), "semantic_layer": layer.get("semantic_layer", {})}

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
