"""The `images` table: image bytes (the file is portable), perceptual hashes, and the
representative a near-duplicate points at. Functions over one connection."""
from __future__ import annotations

import io

__all__ = ["hashes", "representative", "put", "merge", "data", "drop_unused", "merged_count", "recompress"]

LOSSLESS_MODES = ("1", "L", "LA", "P", "PA", "RGB", "RGBA")  # 8 bits a channel: WebP holds them exactly


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


def webp_lossless(data: bytes) -> bytes | None:
    """The PNG `data` as lossless WebP, if that is smaller and decodes to the same pixels (RGBA,
    compared); None otherwise (another format, 16-bit channels, an animation, no gain)."""
    from PIL import Image

    try:
        im = Image.open(io.BytesIO(data))
        if im.format != "PNG" or im.mode not in LOSSLESS_MODES or getattr(im, "n_frames", 1) != 1:
            return None
        im.load()
        out = io.BytesIO()
        im.save(out, "WEBP", lossless=True, quality=100, method=4, exact=True)
        webp = out.getvalue()
        if len(webp) >= len(data):
            return None
        back = Image.open(io.BytesIO(webp))
        return webp if back.convert("RGBA").tobytes() == im.convert("RGBA").tobytes() else None
    except Exception:  # noqa: BLE001 - an image Pillow cannot read or write this way stays as it is
        return None


def recompress(con) -> tuple[int, int]:
    """PNG blobs rewritten as lossless WebP where smaller and pixel-identical (`dgrag snapshot`),
    and the bytes of merged near-duplicates dropped (what is served for them is the representative's).
    The key (sha256 of the page's file) stays, so a re-index still finds them; the format column
    says webp, which the /images route and the chat's image parts serve as such. Returns the
    bytes (before, after) of the rows rewritten or emptied."""
    before = after = 0
    merged = con.execute("SELECT coalesce(sum(length(data)), 0) FROM images WHERE representative IS NOT NULL "
                         "AND length(data) > 0").fetchone()[0]
    # a merged near-duplicate is served as its representative (`data`): its own bytes are never read
    con.execute("UPDATE images SET data = X'' WHERE representative IS NOT NULL")
    before += merged
    rows = con.execute("SELECT sha256 FROM images WHERE format = 'png' AND representative IS NULL").fetchall()
    for (sha,) in rows:
        data = bytes(con.execute("SELECT data FROM images WHERE sha256 = ?", (sha,)).fetchone()[0])
        webp = webp_lossless(data)
        if webp is not None:
            con.execute("UPDATE images SET data = ?, format = 'webp' WHERE sha256 = ?", (webp, sha))
            before, after = before + len(data), after + len(webp)
    return before, after
