"""The `meta` table (key -> value: the embedder, the graph version, where the docs came from)
and the persisted graph snapshot (`graph_cache`). Functions over one connection."""
from __future__ import annotations

import datetime
import io
import json
import zipfile

__all__ = ["get", "set", "items", "graph_version", "read_graph_cache", "has_table", "deflate_graph_cache",
           "record_indexed", "record_source", "docs_version"]

SOURCE_FIELDS = ("repo", "branch", "commit", "commit_time")  # what `dgrag sync` records of the docs' commit


def get(con, key: str, default: str | None = None) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else default


def set(con, key: str, value: str) -> None:  # noqa: A001 - read as meta.set(...)
    con.execute("INSERT INTO meta(key, value) VALUES (?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, str(value)))


def items(con) -> dict[str, str]:
    return dict(con.execute("SELECT key, value FROM meta").fetchall())


def graph_version(con) -> int:
    """Moves on with every committed write (Store.transaction): the snapshot's cache key."""
    return int(get(con, "graph_version", "0"))


def has_table(con, name: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone() is not None


def read_graph_cache(con, version: int) -> bytes | None:
    if not has_table(con, "graph_cache"):
        return None  # a file from before migration 0003, opened read-only
    row = con.execute("SELECT data FROM graph_cache WHERE id=1 AND version=?", (version,)).fetchone()
    return bytes(row[0]) if row else None


def deflate_graph_cache(con) -> tuple[int, int]:
    """Rewrite the graph snapshot (an .npz zip) with its members deflated, as numpy's
    savez_compressed writes it: np.load reads either, so the loader is unchanged. Same version:
    still the snapshot of this graph. Returns its bytes (before, after)."""
    row = con.execute("SELECT data FROM graph_cache WHERE id=1").fetchone() if has_table(con, "graph_cache") else None
    if row is None:
        return 0, 0
    blob = bytes(row[0])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
    packed = out.getvalue()
    if len(packed) < len(blob):
        con.execute("UPDATE graph_cache SET data=? WHERE id=1", (packed,))
        return len(blob), len(packed)
    return len(blob), len(blob)


# ---- what the index holds: its pages, when they were indexed, and the commit they came from ----
def record_indexed(con, pages: int) -> None:
    """An index run ended: the pages the file now holds, and when."""
    set(con, "pages", str(pages))
    set(con, "indexed_at", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


def record_source(con, source: dict) -> None:
    """The repository, branch, commit and commit time the docs folder was checked out at
    (`dgrag sync`), with that folder: another folder indexed later makes it stale."""
    set(con, "source", json.dumps({**{k: source.get(k) for k in SOURCE_FIELDS}, "docs_root": get(con, "docs_root")},
                                  ensure_ascii=False))


def docs_version(con) -> dict:
    return docs_version_of(items(con))


def docs_version_of(meta: dict[str, str]) -> dict:
    """What an index holds, from its meta (the file's, or a loaded snapshot's): pages, indexed_at,
    and the repo, branch, commit and commit_time of the sync that brought them (None where the
    docs folder indexed last is not that sync's checkout: `dgrag index` of a plain folder)."""
    try:
        source = json.loads(meta.get("source") or "{}")
    except ValueError:
        source = {}
    if not isinstance(source, dict) or source.get("docs_root") != meta.get("docs_root"):
        source = {}
    pages = meta.get("pages")
    return {"pages": int(pages) if pages and pages.isdigit() else None, "indexed_at": meta.get("indexed_at"),
            **{k: source.get(k) for k in SOURCE_FIELDS}}
