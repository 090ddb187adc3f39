"""The question log of one index: every answer the app gives (chat, widget, REST, /v1, MCP) and
the feedback on it, in the `asked` and `feedback` tables (store/asked.py) of the index file, or
of a side file where the index is read-only or `log_db` says so.

Why a thread of its own: an answer must not wait on SQLite's write lock, which an indexing job
can hold for a batch. Answers are queued and written in order by one thread with one
connection; feedback goes through the same queue (after the answer it names) and its caller
waits for the row id. The last answers are also kept in memory, bounded: feedback on one of
them is stored with its answer even when logging is off, or before the queue has written it.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import sys
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import Future
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..config import Settings
from ..errors import LogUnavailable, UnknownAnswer

RECENT = 1000  # answers held in memory for feedback (each at most ANSWER_CHARS of text)
ANSWER_CHARS = 20_000
QUEUE = 10_000  # answers waiting to be written, at most; past it the oldest waiting are dropped, said on stderr
DAY_S = 24 * 3600.0
WAIT_S = 35.0  # a feedback caller waits this long for its row (SQLite's busy timeout is 30 s)
RETRIES = 3


def new_answer_id() -> str:
    return f"ans-{uuid.uuid4().hex[:24]}"


def log_path(settings: Settings) -> tuple[Path | None, str]:
    """(the file the log goes to, or None; why there, in words)."""
    if settings.log_db:
        return Path(settings.log_db), "log_db"
    db = Path(settings.db_path)
    folder_ok = os.access(db.parent if db.parent.exists() else db.parent.parent, os.W_OK)
    if folder_ok and (not db.exists() or os.access(db, os.W_OK)):
        return db, "the index file"
    side = db.with_name(f"{db.stem}.asked.db")
    if folder_ok or (side.exists() and os.access(side, os.W_OK)):
        return side, "beside the read-only index file"
    return None, f"the index file {db} and its folder are read-only: set log_db to a writable file"


class QuestionLog:
    """One index's log: `record` an answer (queued), `feedback` on one (waits for its row)."""

    def __init__(self, settings: Settings):
        self.on = bool(settings.log_questions)
        self.retention_days = int(settings.log_retention_days)
        self.path, self.where = log_path(settings)
        self._recent: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()
        # held around each write: open_index takes it to swap the file in under no open connection
        self.file_lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._pruned_at: float | None = None  # time.monotonic() of the last pruning
        self.dropped = 0

    # ---- what callers use ----------------------------------------------------------------------
    def record(self, answer_id: str, **row) -> None:
        """One answer given: held in memory, and queued for the file when logging is on."""
        row = {**row, "answer_text": str(row.get("answer_text", ""))[:ANSWER_CHARS]}
        with self._lock:
            self._recent[answer_id] = row
            self._recent.move_to_end(answer_id)
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        if self.on and self.path is not None:
            if self._queue.qsize() >= QUEUE:
                self.dropped += 1
                print(f"question log: {QUEUE} answers waiting to be written; one dropped", file=sys.stderr)
                return
            self._submit(("answer", answer_id, row))

    def holds(self, answer_id: str) -> bool:
        """Whether this log knows the answer: in memory, or in its file."""
        with self._lock:
            if answer_id in self._recent:
                return True
        return self.path is not None and self._run(("has", answer_id, None)).result(WAIT_S)

    def feedback(self, answer_id: str, rating: int, comment: str = "", channel: str = "") -> int:
        """Store a verdict on an answer (and the answer, when only memory held it); its row id.
        UnknownAnswer: no such answer; LogUnavailable: nowhere to write, or no answer in time."""
        if self.path is None:
            raise LogUnavailable(f"no question log to store feedback in: {self.where}")
        with self._lock:
            row = self._recent.get(answer_id)
        future = self._run(("feedback", answer_id, {"row": row, "rating": rating, "comment": comment,
                                                    "channel": channel}))
        try:
            return future.result(WAIT_S)
        except TimeoutError:
            raise LogUnavailable("the question log is busy (an indexing job holds the file); try again") from None

    def start(self) -> None:
        """At the server's start: prune past the retention period (when the file exists)."""
        if self.path is not None and self.path.exists():
            self._submit(("prune", "", None))

    def flush(self, timeout: float = WAIT_S) -> None:
        """Wait until every queued write is done (tests, shutdown)."""
        if self._thread is not None:
            self._run(("noop", "", None)).result(timeout)

    def describe(self) -> dict:
        return {"log_questions": self.on, "file": str(self.path) if self.path else None, "where": self.where,
                "retention_days": self.retention_days, "recent_in_memory": len(self._recent)}

    # ---- the writer thread -----------------------------------------------------------------------
    def _run(self, item: tuple) -> Future:
        future: Future = Future()
        self._submit((*item, future) if len(item) == 3 else item)
        return future

    def _submit(self, item: tuple) -> None:
        if len(item) == 3:
            item = (*item, None)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="dgrag-question-log", daemon=True)
                self._thread.start()
        self._queue.put(item)

    def _loop(self) -> None:
        writer = _Writer(self.path, create=self.where != "the index file")
        try:
            while True:
                due = self._pruned_at is None or time.monotonic() - self._pruned_at >= DAY_S
                if due and self.path.exists():
                    self._prune(writer)
                try:
                    kind, answer_id, payload, future = self._queue.get(timeout=3600)
                except queue.Empty:
                    continue
                if kind == "prune":  # start(): now, whenever the last was
                    self._prune(writer)
                    continue
                try:
                    with self.file_lock:
                        result = writer.do(kind, answer_id, payload)
                        if self._queue.empty():  # idle: no connection kept on a file that may be replaced
                            writer.close()
                except Exception as exc:  # noqa: BLE001 - one bad write must not stop the log
                    if future is not None:
                        future.set_exception(exc)
                    else:
                        print(f"question log: {kind} {answer_id} not written: {exc}", file=sys.stderr)
                    continue
                if future is not None:
                    future.set_result(result)
        finally:
            writer.close()

    def _prune(self, writer: "_Writer") -> None:
        self._pruned_at = time.monotonic()
        if self.retention_days <= 0:
            return
        before = (datetime.now(timezone.utc) - timedelta(days=self.retention_days)).isoformat(timespec="seconds")
        try:
            with self.file_lock:
                writer.do("prune", before, None)
                writer.close()
        except Exception as exc:  # noqa: BLE001
            print(f"question log: pruning failed: {exc}", file=sys.stderr)


class _Writer:
    """The log thread's connection: opened for the writes waiting (never before the index file
    exists: opening it would make an empty index), closed when none waits."""

    def __init__(self, path: Path, create: bool):
        self.path, self.create = path, create
        self.store = None
        self.inode = None

    def _store(self):
        from ..store import Store

        inode = os.stat(self.path).st_ino if self.path.exists() else None
        if inode is None and not self.create:
            raise LogUnavailable(f"the index file {self.path} does not exist yet")
        if self.store is not None and inode != self.inode:
            self.close()
        if self.store is None:
            self.store = Store(self.path)
            self.inode = os.stat(self.path).st_ino
        return self.store

    def do(self, kind: str, answer_id: str, payload):
        if kind == "noop":
            return None
        for attempt in range(RETRIES):
            try:
                return self._do(kind, answer_id, payload)
            except Exception as exc:  # noqa: BLE001 - "database is locked" past the busy timeout: again
                if "locked" not in str(exc) or attempt == RETRIES - 1:
                    raise
                time.sleep(1.0 + attempt)
        return None

    def _do(self, kind: str, answer_id: str, payload):
        if kind == "has" and not self.create and not self.path.exists():
            return False
        st = self._store()
        if kind == "answer":
            return st.asked.record_answer(answer_id, **payload)
        if kind == "has":
            return st.asked.answer(answer_id) is not None
        if kind == "prune":
            return st.asked.prune(answer_id)
        if kind == "feedback":
            if payload["row"] is not None:
                st.asked.record_answer(answer_id, **payload["row"])
            elif st.asked.answer(answer_id) is None:
                raise UnknownAnswer(f"no answer with id {answer_id!r} (never given here, or past the log's "
                                    "retention period)")
            return st.asked.record_feedback(answer_id, payload["rating"], payload["comment"], payload["channel"])
        raise ValueError(kind)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.store = None


def per_index(settings: Settings, name: str, first: bool) -> Settings:
    """The settings of one index of several: the first keeps log_db; another logs to
    "<log_db stem>-<name><suffix>" (one file per index: the gap report reads one index's log)."""
    if first or not settings.log_db:
        return settings
    log = Path(settings.log_db)
    return dataclasses.replace(settings, log_db=str(log.with_name(f"{log.stem}-{name}{log.suffix or '.db'}")))
