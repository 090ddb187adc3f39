"""Bookkeeping tables: the ingest log (`files`), the enrichment log (`enrich_log`) and the LLM
cache (`llm_cache`). Functions over one connection."""
from __future__ import annotations

from .connect import now

__all__ = ["files", "log_file", "forget_file", "skipped_files", "cache_get", "cache_put", "enrich_status",
           "log_enrich", "enrich_counts", "enrich_failures"]


# ---- ingest log: one row per source file with its hash and outcome ----------------------------
def files(con) -> dict[str, tuple[str | None, str]]:
    """path -> (content hash, status) of every file seen."""
    return {p: (h, s) for p, h, s in con.execute("SELECT path, content_hash, status FROM files")}


def log_file(con, path: str, content_hash: str | None, status: str, reason: str = "", nodes: int = 0) -> None:
    con.execute(
        "INSERT INTO files(path, content_hash, status, reason, nodes, updated_at) VALUES (?,?,?,?,?,?) "
        "ON CONFLICT(path) DO UPDATE SET content_hash=excluded.content_hash, status=excluded.status, "
        "reason=excluded.reason, nodes=excluded.nodes, updated_at=excluded.updated_at",
        (path, content_hash, status, reason, nodes, now()))


def forget_file(con, path: str) -> None:
    con.execute("DELETE FROM files WHERE path=?", (path,))


def skipped_files(con) -> list[tuple[str, str]]:
    return con.execute("SELECT path, reason FROM files WHERE status='skipped' ORDER BY path").fetchall()


# ---- LLM cache: every call keyed by a hash of model, messages and parameters ------------------
def cache_get(con, key: str) -> str | None:
    row = con.execute("SELECT response FROM llm_cache WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def cache_put(con, key: str, model: str, response: str) -> None:
    """Callers on worker threads hold Store.write_lock: the connection is shared."""
    con.execute("INSERT OR REPLACE INTO llm_cache(key, model, response, created_at) VALUES (?,?,?,?)",
                (key, model, response, now()))


# ---- enrichment log: per node and step, done / failed / offline and the input it saw ----------
def enrich_status(con, step: str) -> dict[int, tuple[str, str]]:
    """node -> (status, input_hash) for one step."""
    return {n: (s, h) for n, s, h in con.execute(
        "SELECT node, status, input_hash FROM enrich_log WHERE step=?", (step,))}


def log_enrich(con, node: int, step: str, status: str, reason: str, attempts: int, input_hash: str) -> None:
    con.execute(
        "INSERT INTO enrich_log(node, step, status, reason, attempts, input_hash, updated_at) "
        "VALUES (?,?,?,?,?,?,?) ON CONFLICT(node, step) DO UPDATE SET status=excluded.status, "
        "reason=excluded.reason, attempts=enrich_log.attempts + excluded.attempts, "
        "input_hash=excluded.input_hash, updated_at=excluded.updated_at",
        (node, step, status, reason[:2000], attempts, input_hash, now()))


def enrich_counts(con) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for step, status, n in con.execute("SELECT step, status, count(*) FROM enrich_log GROUP BY step, status"):
        out.setdefault(step, {})[status] = n
    return out


def enrich_failures(con, step: str | None = None) -> list[tuple[int, str, str]]:
    q = "SELECT node, step, reason FROM enrich_log WHERE status='failed'"
    return con.execute(q + (" AND step=?" if step else ""), (step,) if step else ()).fetchall()
