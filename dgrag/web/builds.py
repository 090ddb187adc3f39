"""The app's batched builds (workflows/progressive.py): the first start's demo index, a shipped
prebuilt index brought up to date, a folder indexed from the Index tab; the banner that shows
how far the running one got, and whether there is anything to answer from yet.

Each build writes as the index's one writer (`IndexKeeper`); questions are answered from every
batch as it commits.
"""
from __future__ import annotations

import threading
from pathlib import Path

from ..backends.embedder_cpu import lower_priority
from ..config import PROJECT_ROOT, Settings
from ..errors import DgragError, IndexNotReady
from ..workflows import Job, Progressive
from .index_keeper import IndexKeeper

BUNDLED_CORPUS = PROJECT_ROOT / "data" / "arkui-x-docs"  # shipped with the repo: CC BY 4.0, see its LICENSE
SHARED_CORPUS = PROJECT_ROOT.parent / "shared" / "corpus" / "arkui-x-docs"
EXCERPT = PROJECT_ROOT / "tests" / "fixtures" / "docs"
DEMO_URL = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"


def demo_docs() -> Path:
    """The demo corpus: the copy shipped in data/ (a clone or a Space has it), else the shared
    ArkUI-X docs beside the checkout, else the test excerpt (an installed package has neither)."""
    return next((d for d in (BUNDLED_CORPUS, SHARED_CORPUS) if d.is_dir()), EXCERPT)


class Builds:
    def __init__(self, settings: Settings, index: IndexKeeper):
        self.settings = settings
        self.index = index
        self.build: Progressive | None = None  # the batched build running or last run, if any
        self.first_start = False  # that build is the first start's: no index to answer from before it
        self.shipped_note = ""  # what became of a shipped prebuilt index at the first start, if any

    # ---- the first start ----------------------------------------------------------------
    def demo_build(self) -> Progressive | None:
        """The first start's build of the demo index, when the file is absent or a build of it
        did not finish (None otherwise: an index someone built stays as it is)."""
        db = Path(self.settings.db_path)
        docs = Path(self.settings.docs_root or demo_docs())
        bundled = docs in (BUNDLED_CORPUS, SHARED_CORPUS, EXCERPT)
        build = Progressive(self.settings, docs, DEMO_URL if bundled else self.settings.url_template,
                            self.index.writer, self.settings.include)
        if db.exists() and (build.finished or not build.builds_this_file()):  # someone else's index
            return None
        return build

    def start_demo_build(self) -> Progressive | None:
        """Start (or resume) the demo build in the background; questions are answered from each
        batch as it commits. With no index file yet, a shipped prebuilt index that fits is copied
        into place first and served at once; only its pages that differ are indexed again."""
        installed = self.install_shipped()
        if installed is not None and not installed.same:
            self._refresh_shipped(installed)
            return None
        self.build = self.demo_build()
        self.first_start = self.build is not None
        if self.build is not None:
            self.build.start()
        return self.build

    def install_shipped(self):
        """The shipped index copied to the absent index file (`workflows.shipped`), or None (none
        found, a file there already, or refused: `shipped_note` says why, and the build runs)."""
        from ..workflows.shipped import SnapshotRefused, install

        db = Path(self.settings.db_path)
        if db.exists():
            return None
        docs = Path(self.settings.docs_root or demo_docs())
        try:
            found = install(self.settings, docs, db)
        except SnapshotRefused as exc:
            self.shipped_note = f"shipped index refused: {exc}; building the index instead"
            return None
        if found is not None:
            todo = ([f"{len(found.changed)} changed and {len(found.removed)} removed pages are indexed again"]
                    if found.changed or found.removed else [])
            todo += ["every page is read again by this dgrag's newer reader"] if found.reread else []
            what = "as it is" if found.same else f"at once; {' and '.join(todo)} in the background"
            self.shipped_note = f"shipped index {found.source} served {what}"
        return found

    def _refresh_shipped(self, found) -> None:
        """Index the pages of the shipped index that differ, as the writer, in the background."""
        from ..store import Store
        from ..workflows.shipped import refresh

        build = self.demo_build() or Progressive(self.settings, Path(self.settings.docs_root or demo_docs()),
                                                 DEMO_URL, self.index.writer, self.settings.include)

        def work(job: Job) -> dict:
            lower_priority(10)
            with Store(self.settings.db_path) as store:
                counts = refresh(build.settings, store, found, progress=job.on_progress)
                build.mark_done(store)
            return counts

        threading.Thread(target=self.index.writer.run,
                         args=(f"shipped index: {len(found.changed) + len(found.removed)} pages differ", work),
                         name="dgrag-shipped-refresh", daemon=True).start()

    def ensure_index(self) -> None:
        """Build the demo index (all of it, in the calling thread) if it is absent or unfinished."""
        build = self.demo_build()
        if build is not None:
            status = build.run()
            if status.error:
                raise DgragError(f"building the demo index failed: {status.error}")

    # ---- a folder from the Index tab ----------------------------------------------------
    def index_docs(self, docs: Path, url_template: str = "", secret: str | None = None) -> Job:
        """The Index tab's "index this folder": the first start's batched path (each batch
        parsed, embedded and given the offline semantic layer, questions answered from each
        batch as it commits, the banner showing how far it got, a rerun resuming)."""
        docs = Path(docs)
        if not docs.is_dir():
            raise DgragError(f"not a folder on the server: {docs}")
        self.index.check_admin(secret)
        if self.build is not None and self.build.status().running:
            raise DgragError(f"{self.build.status().title} is still being built; index a folder when it is done")
        build = Progressive(self.settings, docs, url_template, self.index.writer, self.settings.include,
                            title=f"the index of {docs.name or docs}")
        build.start_over()
        self.build, self.first_start = build, False
        return self.index.run_job("index", build.run_in, secret)

    # ---- how far it got -----------------------------------------------------------------
    def build_banner(self) -> str:
        """One line on the first start's build (empty when none runs or it is done)."""
        return self.build.status().banner() if self.build is not None else ""

    def ready(self) -> None:
        """Raise IndexNotReady while the first batch of the first build is still running."""
        build = self.build
        if build is not None and self.first_start and build.status().batches_done == 0:
            if build.status().error:
                raise IndexNotReady(f"building the demo index failed: {build.status().error}")
            raise IndexNotReady("the demo index is being built; its first pages are ready in about a minute "
                                "(see /health: build)")
