"""One index file as the app serves it: the loaded snapshot, the one writer, the admin guard.

Queries run against the loaded snapshot (`IndexHandle`); a writing job (index, sync, enrich,
a teammate's file opened) takes the writer lock, writes the file, then builds the new snapshot
aside and swaps it in, so chat keeps answering throughout.
"""
from __future__ import annotations

import hmac
import os
import shutil
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Callable

from ..backends.embedder_cpu import lower_priority
from ..config import Settings
from ..errors import AccessDenied, ConfigError, DgragError, IndexFileError, SyncError
from ..workflows import Job, Writer
from .asklog import QuestionLog


class IndexKeeper:
    def __init__(self, settings: Settings):
        from ..retrieve.loaded import IndexHandle

        self.settings = settings
        self.handle = IndexHandle(settings.db_path, settings)
        self.writer = Writer(after=self.handle.reload)  # one writer; readers see each commit after a reload
        self._described: tuple[tuple, dict] | None = None  # (the file's state, its description)
        # every answer given and the feedback on it, in the index file (or beside it): answering.py
        # writes to it, and a file opened in its place moves under its lock
        self.log = QuestionLog(settings)

    @property
    def job(self) -> Job | None:
        return self.writer.job

    @property
    def write_lock(self) -> threading.Lock:
        return self.writer.lock

    # ---- the admin guard ----------------------------------------------------------------
    def check_admin(self, secret: str | None) -> None:
        want = self.settings.admin_secret
        if want and not same_secret(secret or "", want):
            raise AccessDenied("this action needs the admin secret (the demo is read-only without it)")

    @property
    def read_only(self) -> bool:
        return bool(self.settings.admin_secret)

    # ---- what the file holds ------------------------------------------------------------
    def docs_version(self) -> dict:
        """What the answers come from: the loaded snapshot's pages, when they were indexed and the
        commit they were synced from (store/meta.py); before a load, the file's ({} without one)."""
        from ..store.meta import docs_version_of

        loaded = self.handle.loaded
        if loaded is not None:
            return docs_version_of(loaded.meta)
        if not Path(self.settings.db_path).exists():
            return {}
        try:
            return self.description().get("docs_version") or {}
        except DgragError:
            return {}

    def description(self) -> dict:
        """The file's Store.describe(), read again only when the file or its WAL changed (a
        write, another file moved in): /health is polled, and should not open SQLite each time."""
        from ..store import Store

        path = Path(self.settings.db_path)
        # an empty WAL (the first reader creates one) holds no write: it counts as none
        state = tuple((info.st_ino, info.st_mtime_ns, info.st_size) if (info := _stat(p)) and info.st_size else None
                      for p in (path, Path(f"{path}-wal")))
        cached = self._described
        if cached is not None and cached[0] == state:
            return dict(cached[1])
        with Store(path, readonly=True) as st:
            described = st.describe()
        self._described = (state, described)
        return dict(described)

    def stats(self) -> dict:
        from ..store import Store

        with Store(self.settings.db_path, readonly=True) as st:
            return {**st.stats(), "enrichment": st.logs.enrich_counts(), "skipped_files": st.logs.skipped_files()[:50]}

    # ---- writing ------------------------------------------------------------------------
    def run_job(self, name: str, work: Callable[[Job], dict], secret: str | None = None) -> Job:
        """Run `work` as the one writer; readers keep the old snapshot until it finishes."""
        self.check_admin(secret)

        def lowered(job: Job) -> dict:
            lower_priority(10)  # the job's thread and its embedding workers: queries get the CPU first
            return work(job)

        return self.writer.run(name, lowered)

    def cancel_job(self, secret: str | None = None) -> str:
        """Ask the running job to stop at its next step (what it committed stays); needs the
        admin secret like every other write."""
        self.check_admin(secret)
        return self.writer.cancel()

    def sync(self, repo: str = "", branch: str = "", docs: str = "", secret: str | None = None) -> Job:
        """Sync a docs repository (the settings' `sync_repo` by default) into this index as the one
        writer (workflows/sync.py): questions are answered from the snapshot loaded before until
        the sync has committed, then from the new one."""
        from ..workflows.sync import sync

        s = self.settings
        repo = repo or s.sync_repo
        if not repo:
            raise ConfigError("no repository to sync: give one, or set sync_repo (DGRAG_SYNC_REPO)")

        def work(job: Job) -> dict:
            return sync(s, repo, branch=branch or s.sync_branch, docs=docs or s.sync_docs,
                        progress=job.on_progress).as_dict()

        return self.run_job(f"sync {repo}", work, secret)

    def scheduled_sync(self) -> str:
        """One run of the serve schedule (the server's own: no secret asked): its line, or
        SyncError with why it failed."""
        job = self.sync(secret=self.settings.admin_secret)
        if job.error:
            raise SyncError(job.error)
        return job.counts["line"]

    def enrich(self, step: str, secret: str | None = None) -> Job:
        def work(job: Job) -> dict:
            from ..store import Store
            from ..workflows import enrich_index

            with Store(self.settings.db_path) as store:
                steps = () if step == "synonymy" else (step,)
                return enrich_index(self.settings, store, steps, progress=job.on_progress,
                                    cancel=job.cancel).as_dict()

        return self.run_job(step, work, secret)

    def snapshot(self, dest_dir: Path | None = None) -> Path:
        """A consistent single-file copy of the index (VACUUM INTO), taken while serving."""
        from ..retrieve.loaded import ensure_graph_cache
        from ..store import Store

        dest_dir = Path(dest_dir or tempfile.mkdtemp(prefix="dgrag-snapshot-"))
        dest = dest_dir / f"{Path(self.settings.db_path).stem}-{time.strftime('%Y%m%d-%H%M%S')}.db"
        ensure_graph_cache(self.settings.db_path)  # the copy starts without building anything
        with Store(self.settings.db_path, readonly=True) as st:
            st.copy_to(dest)
        return dest

    def open_index(self, uploaded: Path, secret: str | None = None) -> dict:
        """Validate a teammate's index file, then make it the served one (the old file is kept)."""
        from ..backends.embedder_choice import make_embedder, resolve_embedder
        from ..store import Store

        self.check_admin(secret)
        uploaded = Path(uploaded)
        with Store(uploaded, readonly=True) as st:
            if st.quick_check() != "ok":
                raise IndexFileError("the uploaded file fails SQLite's integrity check")
            # the file decides the model (a server started with an explicit other one refuses it);
            # it must be one this server can load, at the recorded dimension
            emb = make_embedder(resolve_embedder(self.settings, st.meta.items(), "the uploaded file"), role="query")
            st.check_embedder(emb.model_id, emb.dim)
            stats = st.stats()
        target = Path(self.settings.db_path)
        with self.write_lock, self.log.file_lock:  # the question log writes to no file while it moves
            staged = target.with_suffix(".incoming.db")
            shutil.copyfile(uploaded, staged)
            if target.exists():
                shutil.copyfile(target, target.with_suffix(".previous.db"))
            os.replace(staged, target)
            for extra in (Path(f"{target}-wal"), Path(f"{target}-shm")):
                extra.unlink(missing_ok=True)
            self.handle.reload()
        return stats


def same_secret(given: str, want: str) -> bool:
    """Compared in constant time: how long a wrong secret takes tells nothing of the right one."""
    return hmac.compare_digest(given.encode(), want.encode())


def safe_extract_zip(zip_path: Path, target: Path, max_bytes: int) -> Path:
    """Unpack a docs zip: no member may land outside `target`; total size is capped."""
    target = Path(target).resolve()
    total = 0
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            dest = (target / info.filename).resolve()
            if dest != target and target not in dest.parents:
                raise AccessDenied(f"zip member escapes the target folder: {info.filename}")
            if info.external_attr >> 16 & 0o170000 == 0o120000:
                raise AccessDenied(f"zip member is a symlink: {info.filename}")
            total += info.file_size
            if total > max_bytes:
                raise DgragError(f"zip expands beyond {max_bytes} bytes")
        zf.extractall(target)
    return target


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None
