"""Index files as an older dgrag wrote them: the first migrations' SQL only, as it stood then."""
from __future__ import annotations

from dgrag.store.connect import _split_sql, migration_files, open_connection


def open_at_version(path, version: int):
    """A connection to a new file holding migrations 1..`version`, inside an open transaction
    (the caller writes that version's rows, then commits)."""
    con = open_connection(path)
    con.execute("BEGIN")
    for number, name, f in migration_files()[:version]:
        for statement in _split_sql(f.read_text(encoding="utf-8")):
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')", (number, name))
    return con
