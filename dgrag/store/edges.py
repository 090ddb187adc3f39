"""The `edges` table (typed, weighted, stored once per pair) and the Markdown `links` that
jump edges are derived from. Functions over one connection."""
from __future__ import annotations

from typing import Iterable, Sequence

__all__ = ["add", "delete_from", "replace_links", "rebuild_jump", "page_links", "unresolved_links", "table", "counts"]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def add(con, edges: Iterable[tuple[int, int, str, float]]) -> None:
    con.executemany("INSERT INTO edges(src, dst, type, weight) VALUES (?,?,?,?) "
                    "ON CONFLICT(src, dst, type) DO UPDATE SET weight=excluded.weight", edges)


def delete_from(con, rowids: Sequence[int], types: Sequence[str]) -> None:
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        con.execute(f"DELETE FROM edges WHERE src IN ({_marks(len(part))}) AND type IN ({_marks(len(types))})",
                    part + list(types))


def replace_links(con, rowids: Sequence[int], links: Iterable[tuple[int, str, str]]) -> None:
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        con.execute(f"DELETE FROM links WHERE src IN ({_marks(len(part))})", part)
    con.executemany("INSERT OR IGNORE INTO links(src, target_path, anchor) VALUES (?,?,?)", links)


def rebuild_jump(con) -> int:
    """jump edges chunk -> file for every link whose target page is indexed."""
    con.execute("DELETE FROM edges WHERE type='jump'")
    con.execute("INSERT OR IGNORE INTO edges(src, dst, type, weight) "
                "SELECT DISTINCT l.src, n.rowid, 'jump', 1.0 FROM links l "
                "JOIN nodes n ON n.type='file' AND n.source_path=l.target_path WHERE l.src != n.rowid")
    return con.execute("SELECT count(*) FROM edges WHERE type='jump'").fetchone()[0]


def page_links(con) -> list[tuple[str, str]]:
    """(page, linked page) for every Markdown link between pages, each pair once."""
    return con.execute("SELECT DISTINCT s.source_path, l.target_path FROM links l JOIN nodes s ON s.rowid = l.src "
                       "WHERE s.source_path IS NOT NULL AND l.target_path != s.source_path").fetchall()


def unresolved_links(con) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT DISTINCT s.source_path, l.target_path FROM links l JOIN nodes s ON s.rowid=l.src "
        "WHERE l.target_path NOT IN (SELECT path FROM files WHERE status='ok') ORDER BY 1, 2").fetchall()


def table(con, codes: dict[str, int], other: int):
    """(src rowids, dst rowids, type code, weight) of every edge, as arrays."""
    import numpy as np

    case = " ".join(f"WHEN '{t}' THEN {int(c)}" for t, c in codes.items())
    rows = con.execute(f"SELECT src, dst, CASE type {case} ELSE {int(other)} END, weight FROM edges").fetchall()
    arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
    return (arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2].astype(np.uint8),
            arr[:, 3].astype(np.float32))


def counts(con) -> dict[str, int]:
    return dict(con.execute("SELECT type, count(*) FROM edges GROUP BY type ORDER BY type").fetchall())
