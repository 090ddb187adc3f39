"""A request reads each node row from the index file once: the stage-2 rerank, the final rerank
and the references share one `NodeRows` made for the request (they read the same chunks 2 to 4
times a request before)."""
from __future__ import annotations

import re
from collections import Counter

import dgrag.store.rows as rows_module
from dgrag.retrieve.retriever import Retriever
from dgrag.store import NodeRows, Store

_ROWIDS = re.compile(r"FROM nodes(?: n)? WHERE (?:n\.)?rowid IN \(([\d,]+)\)")


def _traced(con) -> Counter:
    """rowid -> how many times SQLite was asked for it on `con`."""
    asked: Counter = Counter()

    def seen(sql: str) -> None:
        for m in _ROWIDS.finditer(sql):
            asked.update(int(r) for r in m.group(1).split(","))

    con.set_trace_callback(seen)
    return asked


def test_rows_are_read_once_and_a_missing_one_is_remembered(indexed):
    with Store(indexed.db_path, readonly=True) as st:
        some = st.nodes.of_type(["chunk"])[:4]
        asked = _traced(st.con)
        rows = NodeRows(st.con)
        first = rows.get(some[:3])
        assert list(first) == some[:3] and all(first[r]["rowid"] == r for r in some[:3])
        again = rows.get([some[3], some[1], 10**9, some[0]])  # one new, two held, one the file lacks
        assert list(again) == [some[3], some[1], some[0]]
        assert again[some[1]] is first[some[1]]
        assert rows.get([10**9]) == {}
        assert asked == Counter({r: 1 for r in [*some, 10**9]}) and rows.read == 5


def test_a_search_reads_each_row_once(indexed, monkeypatch):
    """Every step of a search that reads node rows (rerank of the chunk and page routes, the
    references) goes through the request's NodeRows: no rowid is asked of SQLite twice."""
    asked: Counter = Counter()
    real = rows_module.by_rowids

    def counting(con, rowids):
        rowids = list(rowids)
        asked.update(rowids)
        return real(con, rowids)

    monkeypatch.setattr(rows_module, "by_rowids", counting)
    retriever = Retriever(indexed)
    for method in ("diffusion", "dense", "ppr"):
        asked.clear()
        res = retriever.search("How do I create an application with ACE Tools?", {"method": method})
        assert res.chunks and asked and max(asked.values()) == 1, method
        with Store(indexed.db_path, readonly=True) as st:
            referenced = st.nodes.rowids_of([r.id for r in res.chunks]).values()
        assert set(referenced) <= set(asked)  # the references' rows came through it too
