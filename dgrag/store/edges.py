"""The `edges` table (typed, weighted, stored once per pair) and the Markdown `links` that
jump edges are derived from. Functions over one connection."""
from __future__ import annotations

from typing import Iterable, Sequence

__all__ = ["add", "delete_from", "replace_links", "rebuild_jump", "replace_of_type", "xref_sections", "page_links", "unresolved_links", "table", "counts"]


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
    """jump edges chunk -> file for every link whose target page is indexed, and chunk -> the
    section a link's anchor names (`page.md#anchor`: the section whose heading has that anchor).
    The page's edge stays beside the section's: the ranking's `link` feature joins pages."""
    con.execute("DELETE FROM edges WHERE type='jump'")
    con.execute("INSERT OR IGNORE INTO edges(src, dst, type, weight) "
                "SELECT DISTINCT l.src, n.rowid, 'jump', 1.0 FROM links l "
                "JOIN nodes n ON n.type='file' AND n.source_path=l.target_path WHERE l.src != n.rowid")
    con.execute("INSERT OR IGNORE INTO edges(src, dst, type, weight) "
                "SELECT DISTINCT l.src, n.rowid, 'jump', 1.0 FROM links l "
                "JOIN nodes n ON n.type='chunk' AND n.source_path=l.target_path "
                "AND json_extract(n.meta, '$.anchor') = l.anchor WHERE l.anchor != '' AND l.src != n.rowid")
    return con.execute("SELECT count(*) FROM edges WHERE type='jump'").fetchone()[0]


def replace_of_type(con, kind: str, edges: Iterable[tuple[int, int, float]]) -> int:
    """Every edge of type `kind` replaced by `edges` (src, dst, weight); their count."""
    con.execute("DELETE FROM edges WHERE type=?", (kind,))
    add(con, ((s, d, kind, w) for s, d, w in edges))
    return con.execute("SELECT count(*) FROM edges WHERE type=?", (kind,)).fetchone()[0]


def xref_sections(con) -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str]]]:
    """What cross-references are read from: every section (rowid, page, heading title, text,
    language), and the text of each code block under its section (section rowid, code)."""
    sections = con.execute("SELECT rowid, source_path, coalesce(json_extract(meta, '$.title'), ''), text, "
                           "coalesce(language, '') "
                           "FROM nodes WHERE type='chunk' AND source_path IS NOT NULL").fetchall()
    code = con.execute("SELECT e.src, c.text FROM edges e JOIN nodes c ON c.rowid = e.dst "
                       "JOIN nodes s ON s.rowid = e.src "
                       "WHERE e.type='contains' AND c.type='code' AND s.type='chunk'").fetchall()
    return sections, code


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
