"""The `images` table: image bytes (the file is portable), perceptual hashes, and the
representative a near-duplicate points at. Functions over one connection."""
from __future__ import annotations

__all__ = ["hashes", "representative", "put", "merge", "data", "drop_unused", "merged_count"]


def hashes(con) -> list[tuple[str, str, str, int, int]]:
    """(sha256, dhash, phash, width, height) of every representative image."""
    return con.execute(
        "SELECT sha256, dhash, phash, width, height FROM images WHERE representative IS NULL").fetchall()


def representative(con, sha: str) -> str | None:
    row = con.execute("SELECT coalesce(representative, sha256) FROM images WHERE sha256=?", (sha,)).fetchone()
    return row[0] if row else None


def put(con, sha: str, data: bytes, fmt: str, width: int, height: int, dhash: str, phash: str) -> None:
    con.execute("INSERT OR IGNORE INTO images(sha256, data, format, width, height, dhash, phash) "
                "VALUES (?,?,?,?,?,?,?)", (sha, data, fmt, width, height, dhash, phash))


def merge(con, duplicate: str, representative: str) -> None:
    """Point a near-duplicate (and whatever pointed at it) at its representative."""
    con.execute("UPDATE images SET representative=? WHERE sha256=? OR representative=?",
                (representative, duplicate, duplicate))
    con.execute("UPDATE images SET representative=NULL WHERE sha256=?", (representative,))


def data(con, sha: str) -> tuple[bytes, str] | None:
    """(bytes, format) of an image, or of the representative it was merged into."""
    row = con.execute("SELECT data, format FROM images WHERE sha256=(SELECT coalesce(representative, sha256) "
                      "FROM images WHERE sha256=?)", (sha,)).fetchone()
    return (bytes(row[0]), row[1]) if row else None


def drop_unused(con) -> int:
    """Blobs that no image node shows any more (an image node's content_hash is its blob)."""
    dead = [s for (s,) in con.execute(
        "SELECT sha256 FROM images WHERE representative IS NULL AND sha256 NOT IN "
        "(SELECT content_hash FROM nodes WHERE type='image')")]
    for s in dead:
        con.execute("DELETE FROM images WHERE sha256=? OR representative=?", (s, s))
    return len(dead)


def merged_count(con) -> int:
    return con.execute("SELECT count(*) FROM images WHERE representative IS NOT NULL").fetchone()[0]
