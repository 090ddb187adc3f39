"""The stored approximate-nearest-neighbour indexes (`ann_index`, `ann_index_parts`): one per
kind of vector, a cache keyed by what it indexes. Functions over one connection; a write runs
inside the caller's transaction (`Store.write_ann` holds the lock and takes no graph version)."""
from __future__ import annotations

from dataclasses import dataclass

from . import meta
from .connect import now

__all__ = ["header", "read", "write", "delete"]

# SQLite refuses a value over SQLITE_MAX_LENGTH (1e9 bytes by default): the index goes in parts
PART_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class AnnHeader:
    """What a stored index indexes, and what wrote it."""

    kind: str
    model: str
    count: int
    fingerprint: str
    library: str
    bytes: int
    built_s: float
    updated_at: str

    def matches(self, model: str, count: int, fingerprint: str) -> bool:
        return (self.model, self.count, self.fingerprint) == (model, count, fingerprint)


def header(con, kind: str) -> AnnHeader | None:
    """The stored index's key, or None (none stored, or a file from before migration 0006
    opened where it cannot be upgraded)."""
    if not meta.has_table(con, "ann_index"):
        return None
    row = con.execute("SELECT kind, model, count, fingerprint, library, bytes, built_s, updated_at "
                      "FROM ann_index WHERE kind=?", (kind,)).fetchone()
    return AnnHeader(*row) if row else None


def read(con, kind: str, model: str, count: int, fingerprint: str) -> tuple[AnnHeader, bytearray] | None:
    """The serialized index of `kind` if it indexes exactly these vectors, else None (stale or
    absent). The parts are copied into one buffer sized from the header: one copy, not two."""
    head = header(con, kind)
    if head is None or not head.matches(model, count, fingerprint):
        return None
    out, at = bytearray(head.bytes), 0
    for (data,) in con.execute("SELECT data FROM ann_index_parts WHERE kind=? ORDER BY part", (kind,)):
        out[at:at + len(data)] = data
        at += len(data)
    return (head, out) if at == head.bytes else None  # parts missing: as good as stale


def write(con, kind: str, model: str, count: int, fingerprint: str, library: str, data: bytes,
          built_s: float) -> None:
    """Replace the stored index of `kind`."""
    delete(con, kind)
    view = memoryview(data)
    for part, start in enumerate(range(0, len(view), PART_BYTES)):
        con.execute("INSERT INTO ann_index_parts(kind, part, data) VALUES (?,?,?)",
                    (kind, part, view[start:start + PART_BYTES]))
    con.execute("INSERT INTO ann_index(kind, model, count, fingerprint, library, bytes, built_s, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (kind, model, int(count), fingerprint, library, len(view), float(built_s), now()))


def delete(con, kind: str) -> None:
    con.execute("DELETE FROM ann_index_parts WHERE kind=?", (kind,))
    con.execute("DELETE FROM ann_index WHERE kind=?", (kind,))
