"""The semantic layer's tables: entities (rows of `nodes`), `facts`, `chunk_entities` (which
chunk mentions which entity) and `synonymy_done`. Functions over one connection."""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

from ..core import Fact
from . import vectors

__all__ = ["upsert_entity", "set_entity_text", "clear_chunk", "add_chunk_entity", "add_fact", "forget_nodes",
           "rebuild_edges", "pending_facts", "embedded_fact_texts", "mark_facts_embedded", "facts_by_rowids", "all_facts",
           "entity_names", "counts", "entities_without_synonymy", "mark_synonymy_done"]


def entity_id(norm: str) -> str:
    return "entity-" + hashlib.md5(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def upsert_entity(con, norm: str, name: str, description: str, language: str) -> int:
    """An entity node keyed by its normalised name; the first description wins,
    an LLM description replaces a heuristic one."""
    nid = entity_id(norm)
    row = con.execute("SELECT rowid FROM nodes WHERE id=?", (nid,)).fetchone()
    if row is not None:
        return int(row[0])
    text = f"{name}: {description}" if description else name
    cur = con.execute("INSERT INTO nodes(id, type, text, language, entity_name, entity_norm) "
                      "VALUES (?, 'entity', ?, ?, ?, ?)", (nid, text, language, name, norm))
    return int(cur.lastrowid)


def set_entity_text(con, rowid: int, text: str) -> None:
    con.execute("UPDATE nodes SET text=?, embed_hash=NULL WHERE rowid=? AND text != ?", (text, rowid, text))


def clear_chunk(con, chunk: int) -> None:
    """A chunk's facts and mentions, before its OpenIE is redone."""
    _delete_facts(con, [r for (r,) in con.execute("SELECT rowid FROM facts WHERE chunk=?", (chunk,))])
    con.execute("DELETE FROM chunk_entities WHERE chunk=?", (chunk,))


def _delete_facts(con, rowids: Sequence[int]) -> None:
    vectors.delete_facts(con, rowids)
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        con.execute(f"DELETE FROM facts WHERE rowid IN ({_marks(len(part))})", part)


def add_chunk_entity(con, chunk: int, entity: int, source: str) -> None:
    con.execute("INSERT OR IGNORE INTO chunk_entities(chunk, entity, source) VALUES (?,?,?)", (chunk, entity, source))


def add_fact(con, head: int, relation: str, tail: int, text: str, chunk: int, source: str) -> None:
    con.execute("INSERT OR IGNORE INTO facts(head, relation, tail, text, chunk, source) VALUES (?,?,?,?,?,?)",
                (head, relation, tail, text, chunk, source))


def forget_nodes(con, rowids: Sequence[int]) -> None:
    """Facts, mentions and enrichment rows of deleted chunks or entities (nodes.delete)."""
    m = _marks(len(rowids))
    facts = [r for (r,) in con.execute(
        f"SELECT rowid FROM facts WHERE chunk IN ({m}) OR head IN ({m}) OR tail IN ({m})", list(rowids) * 3)]
    _delete_facts(con, facts)
    con.execute(f"DELETE FROM chunk_entities WHERE chunk IN ({m}) OR entity IN ({m})", list(rowids) * 2)
    con.execute(f"DELETE FROM synonymy_done WHERE entity IN ({m})", list(rowids))
    con.execute(f"DELETE FROM enrich_log WHERE node IN ({m})", list(rowids))


def rebuild_edges(con) -> dict[str, int]:
    """passage edges chunk-entity; semantic edges entity-entity weighted by co-occurrence."""
    con.execute("DELETE FROM edges WHERE type IN ('passage', 'semantic')")
    con.execute("INSERT OR IGNORE INTO edges(src, dst, type, weight) "
                "SELECT chunk, entity, 'passage', 1.0 FROM chunk_entities")
    con.execute("INSERT OR IGNORE INTO edges(src, dst, type, weight) "
                "SELECT min(head, tail), max(head, tail), 'semantic', count(*) FROM facts "
                "WHERE head != tail GROUP BY min(head, tail), max(head, tail)")
    return dict(con.execute(
        "SELECT type, count(*) FROM edges WHERE type IN ('passage','semantic') GROUP BY type").fetchall())


def pending_facts(con, limit: int = 1_000_000) -> list[tuple[int, str]]:
    return con.execute("SELECT rowid, text FROM facts WHERE embedded=0 ORDER BY rowid LIMIT ?", (limit,)).fetchall()


def embedded_fact_texts(con, texts: Iterable[str]) -> dict[str, int]:
    """For each of `texts` that an embedded fact has already, the rowid of one such fact (its
    vector: `vectors.of_rowids`). One pass over the facts however many texts are asked: no index
    on the text (the shipped file would carry it), and a lookup per batch of texts made the
    tenfold corpus's enrichment quadratic."""
    wanted, out = set(texts), {}
    if wanted:
        for rowid, text in con.execute("SELECT rowid, text FROM facts WHERE embedded = 1"):
            if text in wanted:
                out.setdefault(text, int(rowid))
    return out


def mark_facts_embedded(con, rowids: Sequence[int]) -> None:
    con.executemany("UPDATE facts SET embedded=1 WHERE rowid=?", [(int(r),) for r in rowids])


def facts_by_rowids(con, rowids: Iterable[int]) -> list[Fact]:
    """The facts of `rowids` in that order (missing ones left out)."""
    rowids = list(rowids)
    out = {}
    for i in range(0, len(rowids), 500):
        part = rowids[i:i + 500]
        for r in con.execute(f"SELECT rowid, head, relation, tail, text, chunk, source FROM facts "
                             f"WHERE rowid IN ({_marks(len(part))})", part):
            out[r[0]] = Fact(*r)
    return [out[r] for r in rowids if r in out]


def all_facts(con) -> list[tuple[int, int, int, int]]:
    """(rowid, head, tail, chunk) of every fact, for the in-memory retrieval arrays."""
    return con.execute("SELECT rowid, head, tail, chunk FROM facts").fetchall()


def entity_names(con) -> list[tuple[int, str]]:
    """(rowid, normalised name) of every entity, for exact matching of query terms."""
    return con.execute("SELECT rowid, entity_norm FROM nodes WHERE type='entity'").fetchall()


def entities_without_synonymy(con) -> list[int]:
    return [r for (r,) in con.execute(
        "SELECT n.rowid FROM nodes n JOIN vec_entity v ON v.rowid = n.rowid WHERE n.type='entity' "
        "AND n.rowid NOT IN (SELECT entity FROM synonymy_done) ORDER BY n.rowid")]


def mark_synonymy_done(con, rowids: Sequence[int]) -> None:
    con.executemany("INSERT OR IGNORE INTO synonymy_done(entity) VALUES (?)", [(int(r),) for r in rowids])


def counts(con) -> dict[str, int]:
    """Facts in all and by where they came from (offline, llm, imported)."""
    by_source = dict(con.execute("SELECT source, count(*) FROM facts GROUP BY source ORDER BY source").fetchall())
    return {"facts": sum(by_source.values()), **{f"facts_{k}": v for k, v in by_source.items()}}
