"""The node rows one request reads, each read from the file once.

A search reads node rows at several steps: the stage-2 rerank reads its candidates' texts, the
final cross-encoder or LLM rerank reads its candidates again, and the references read the
results, which are mostly the same chunks. One `NodeRows` made per request and passed down
reads each row once and gives the later steps the row it already holds. It lives as long as
the request: a writer's change shows in the next request, never half-way through one.
"""
from __future__ import annotations

from typing import Iterable

from ..core import Node
from .nodes import by_rowids


class NodeRows:
    """rowid -> node for one request over one connection (`Store.con`); not shared between
    threads, as the connection is not."""

    def __init__(self, con):
        self._con = con
        self._rows: dict[int, Node | None] = {}  # None: the file has no such row (deleted since the snapshot)
        self.read = 0  # rows asked of SQLite so far: each rowid at most once

    def get(self, rowids: Iterable[int]) -> dict[int, Node]:
        """The rows of `rowids` the file holds, by rowid; only those not asked for before are read.
        The rows are shared by the request's steps: read them, do not change them."""
        rowids = [int(r) for r in rowids]
        new = [r for r in dict.fromkeys(rowids) if r not in self._rows]
        if new:
            found = {n["rowid"]: n for n in by_rowids(self._con, new)}
            self._rows.update((r, found.get(r)) for r in new)
            self.read += len(new)
        return {r: n for r in rowids if (n := self._rows[r]) is not None}
