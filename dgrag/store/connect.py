"""Open the one index file: pick a sqlite3 that loads sqlite-vec, set pragmas, migrate.

Python's stdlib `sqlite3` is used where it can load extensions; otherwise
`pysqlite3-binary` (a newer SQLite with `enable_load_extension`).
"""
from __future__ import annotations

import datetime as _dt
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import ModuleType

from ..errors import IndexFileError, SchemaTooNew, SqliteVecUnavailable
from .vectors import fold_name_vectors


def now() -> str:
    """The timestamp written in rows (UTC, to the second)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

# The numbered schema files ship inside the package (package data), so a non-editable
# install creates and upgrades index files as a checkout does.
MIGRATIONS_DIR: Traversable = resources.files(__package__) / "migrations"
_MODULE: ModuleType | None = None


def sqlite_module() -> ModuleType:
    """The first sqlite3 DB-API module that can load sqlite-vec (cached)."""
    global _MODULE
    if _MODULE is not None:
        return _MODULE
    tried = []
    for name in ("sqlite3", "pysqlite3.dbapi2"):
        try:
            mod = __import__(name, fromlist=["connect"])
        except ImportError:
            tried.append(f"{name}: not installed")
            continue
        con = mod.connect(":memory:")
        try:
            _load_vec(con)
            _MODULE = mod
            return mod
        except Exception as exc:  # noqa: BLE001 - any failure means "not this one"
            tried.append(f"{name}: {exc}")
        finally:
            con.close()
    raise SqliteVecUnavailable(
        "no sqlite3 module here can load the sqlite-vec extension ("
        + "; ".join(tried)
        + "). Install one that can: `pip install pysqlite3-binary sqlite-vec` "
        "(Linux), or a Python built with loadable SQLite extensions."
    )


def _load_vec(con) -> None:
    import sqlite_vec

    if not hasattr(con, "enable_load_extension"):
        raise RuntimeError("this build has no enable_load_extension")
    con.enable_load_extension(True)
    try:
        sqlite_vec.load(con)
    finally:
        con.enable_load_extension(False)


def open_connection(path: Path | str, *, readonly: bool = False, timeout: float = 30.0):
    """A connection with sqlite-vec loaded, WAL, foreign keys and defensive settings."""
    mod = sqlite_module()
    path = Path(path)
    if readonly:
        if not path.exists():
            raise IndexFileError(f"index file not found: {path}")
        con = mod.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        con = mod.connect(str(path), timeout=timeout, check_same_thread=False)
    con.isolation_level = None  # explicit BEGIN/COMMIT: transactions are ours to draw
    try:
        _load_vec(con)
        # A foreign file must not run code of its own: no triggers/views from its schema
        # act on our statements (trusted_schema off), and no writes to sqlite_master.
        con.execute("PRAGMA trusted_schema=OFF")
        if hasattr(mod, "SQLITE_DBCONFIG_DEFENSIVE") and hasattr(con, "setconfig"):
            con.setconfig(mod.SQLITE_DBCONFIG_DEFENSIVE, True)
        con.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        con.execute("PRAGMA foreign_keys=ON")
        if not readonly:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
        foreign = con.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')").fetchall()
    except mod.DatabaseError as exc:
        con.close()
        raise IndexFileError(f"{path} is not a usable SQLite index file: {exc}") from None
    if foreign:
        con.close()
        names = ", ".join(f"{t} {n}" for t, n in foreign[:5])
        raise IndexFileError(f"{path} contains {names}: dgrag indexes have no triggers or views; "
                             "refusing to open a crafted file")
    return con


# Steps a migration's SQL cannot say (tables whose dimension only the file's meta knows), run in
# its transaction after its SQL file.
STEPS = {5: fold_name_vectors}


def migration_files() -> list[tuple[int, str, Traversable]]:
    """(version, name, file) of every `NNNN_name.sql` shipped with the package, in order."""
    out = []
    for p in MIGRATIONS_DIR.iterdir():
        m = re.match(r"(\d+)_(.+)\.sql$", p.name)
        if m and p.is_file():
            out.append((int(m.group(1)), m.group(2), p))
    return sorted(out, key=lambda t: t[0])


def latest_version() -> int:
    files = migration_files()
    return files[-1][0] if files else 0


def applied_version(con) -> int:
    has = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    ).fetchone()
    if not has:
        tables = con.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        if tables:
            raise IndexFileError("this SQLite file is not a dgrag index (no schema_migrations table)")
        return 0
    row = con.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(con) -> int:
    """Apply pending migrations, each in one transaction, and record them."""
    current = applied_version(con)
    newest = latest_version()
    if current > newest:
        raise SchemaTooNew(
            f"index schema version {current} is newer than this dgrag supports ({newest}); "
            "upgrade dgrag to open it"
        )
    for version, name, path in migration_files():
        if version <= current:
            continue
        sql = path.read_text(encoding="utf-8")
        con.execute("BEGIN IMMEDIATE")
        try:
            if applied_version(con) >= version:  # another connection applied it since we looked
                con.execute("COMMIT")
                continue
            for statement in _split_sql(sql):
                con.execute(statement)
            if version in STEPS:
                STEPS[version](con)
            con.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?,?,?)",
                (version, name, _dt.datetime.now(_dt.timezone.utc).isoformat()),
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return newest


def _split_sql(sql: str) -> list[str]:
    """Statements of a migration file (no triggers in our migrations, so ';' splits)."""
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
