"""SQL of the semantic layer and of enrichment bookkeeping (mixed into `Store`)."""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Sequence

from .connect import now


def entity_id(norm: str) -> str:
    return "entity-" + hashlib.md5(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _marks(n: int) -> str:
    return ",".join("?" * n)


class SemanticMixin:
    con = None  # provided by Store
    write_lock = None  # provided by Store: one writer at a time on the connection

    # ---- entities and facts -----------------------------------------------------------
    def upsert_entity(self, norm: str, name: str, description: str, language: str) -> int:
        """An entity node keyed by its normalised name; the first description wins,
        an LLM description replaces a heuristic one."""
        nid = entity_id(norm)
        row = self.con.execute("SELECT rowid, meta FROM nodes WHERE id=?", (nid,)).fetchone()
        text = f"{name}: {description}" if description else name
        if row is None:
            meta = json.dumps({"name": name, "norm": norm}, ensure_ascii=False)
            cur = self.con.execute(
                "INSERT INTO nodes(id, type, text, breadcrumb, language, content_hash, meta) "
                "VALUES (?, 'entity', ?, ?, ?, ?, ?)", (nid, text, name, language, norm, meta))
            return int(cur.lastrowid)
        return int(row[0])

    def set_entity_text(self, rowid: int, text: str) -> None:
        self.con.execute("UPDATE nodes SET text=?, embed_hash=NULL WHERE rowid=? AND text != ?",
                         (text, rowid, text))

    def clear_chunk_semantics(self, chunk: int) -> None:
        facts = [r for (r,) in self.con.execute("SELECT rowid FROM facts WHERE chunk=?", (chunk,))]
        self._delete_fact_rows(facts)
        self.con.execute("DELETE FROM chunk_entities WHERE chunk=?", (chunk,))

    def _delete_fact_rows(self, rowids: Sequence[int]) -> None:
        has_vec = self.get_meta("embedding_dim") is not None
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            if has_vec:
                self.con.execute(f"DELETE FROM vec_fact WHERE rowid IN ({_marks(len(part))})", part)
            self.con.execute(f"DELETE FROM facts WHERE rowid IN ({_marks(len(part))})", part)

    def add_chunk_entity(self, chunk: int, entity: int, source: str) -> None:
        self.con.execute("INSERT OR IGNORE INTO chunk_entities(chunk, entity, source) VALUES (?,?,?)",
                         (chunk, entity, source))

    def add_fact(self, head: int, relation: str, tail: int, text: str, chunk: int, source: str) -> None:
        self.con.execute(
            "INSERT OR IGNORE INTO facts(head, relation, tail, text, chunk, source) VALUES (?,?,?,?,?,?)",
            (head, relation, tail, text, chunk, source))

    def delete_semantics_of_nodes(self, rowids: Sequence[int]) -> None:
        """Facts and mentions of deleted chunks or entities (called by delete_nodes)."""
        m = _marks(len(rowids))
        facts = [r for (r,) in self.con.execute(
            f"SELECT rowid FROM facts WHERE chunk IN ({m}) OR head IN ({m}) OR tail IN ({m})",
            list(rowids) * 3)]
        self._delete_fact_rows(facts)
        self.con.execute(f"DELETE FROM chunk_entities WHERE chunk IN ({m}) OR entity IN ({m})", list(rowids) * 2)
        self.con.execute(f"DELETE FROM synonymy_done WHERE entity IN ({m})", list(rowids))
        self.con.execute(f"DELETE FROM enrich_log WHERE node IN ({m})", list(rowids))

    def gc_entities(self) -> int:
        """Entities no chunk mentions any more: the reference count reached zero."""
        dead = [r for (r,) in self.con.execute(
            "SELECT rowid FROM nodes WHERE type='entity' AND rowid NOT IN (SELECT entity FROM chunk_entities)")]
        self.delete_nodes(dead)
        return len(dead)

    def rebuild_semantic_edges(self) -> dict[str, int]:
        """passage edges chunk-entity; semantic edges entity-entity weighted by co-occurrence."""
        self.con.execute("DELETE FROM edges WHERE type IN ('passage', 'semantic')")
        self.con.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type, weight) "
            "SELECT chunk, entity, 'passage', 1.0 FROM chunk_entities")
        self.con.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type, weight) "
            "SELECT min(head, tail), max(head, tail), 'semantic', count(*) FROM facts "
            "WHERE head != tail GROUP BY min(head, tail), max(head, tail)")
        rows = self.con.execute(
            "SELECT type, count(*) FROM edges WHERE type IN ('passage','semantic') GROUP BY type").fetchall()
        return dict(rows)

    def pending_facts(self, limit: int = 1_000_000) -> list[tuple[int, str]]:
        return self.con.execute(
            "SELECT rowid, text FROM facts WHERE embedded=0 ORDER BY rowid LIMIT ?", (limit,)).fetchall()

    def fact_vectors_by_text(self, texts: Sequence[str]) -> dict[str, bytes]:
        """Vectors of facts already embedded with one of these texts: the same fact drawn from
        another chunk (or another batch) is not embedded again."""
        texts = list(set(texts))
        out: dict[str, bytes] = {}
        for i in range(0, len(texts), 500):
            part = texts[i:i + 500]
            out.update(self.con.execute(
                "SELECT f.text, v.embedding FROM facts f JOIN vec_fact v ON v.rowid = f.rowid "
                f"WHERE f.embedded = 1 AND f.text IN ({_marks(len(part))})", part).fetchall())
        return out

    def mark_facts_embedded(self, rowids: Sequence[int]) -> None:
        self.con.executemany("UPDATE facts SET embedded=1 WHERE rowid=?", [(int(r),) for r in rowids])

    def facts_by_rowids(self, rowids: Iterable[int]) -> list[dict]:
        rowids = list(rowids)
        out = {}
        for i in range(0, len(rowids), 500):
            part = rowids[i:i + 500]
            for r in self.con.execute(
                    f"SELECT rowid, head, relation, tail, text, chunk, source FROM facts "
                    f"WHERE rowid IN ({_marks(len(part))})", part):
                out[r[0]] = dict(zip(("rowid", "head", "relation", "tail", "text", "chunk", "source"), r))
        return [out[r] for r in rowids if r in out]

    def all_facts(self) -> list[tuple[int, int, int, int]]:
        """(rowid, head, tail, chunk) of every fact, for the in-memory retrieval arrays."""
        return self.con.execute("SELECT rowid, head, tail, chunk FROM facts").fetchall()

    def entity_names(self) -> list[tuple[int, str]]:
        """(rowid, normalised name) of every entity, for exact matching of query terms."""
        return self.con.execute("SELECT rowid, content_hash FROM nodes WHERE type='entity'").fetchall()

    # ---- synonymy -----------------------------------------------------------------------
    def entities_without_name_vector(self) -> list[tuple[int, str]]:
        """(rowid, display name) of entities whose name has no vector yet."""
        return self.con.execute(
            "SELECT rowid, breadcrumb FROM nodes WHERE type='entity' "
            "AND rowid NOT IN (SELECT rowid FROM vec_entity_name) ORDER BY rowid").fetchall()

    def entities_without_synonymy(self) -> list[int]:
        return [r for (r,) in self.con.execute(
            "SELECT n.rowid FROM nodes n JOIN vec_entity_name v ON v.rowid = n.rowid WHERE n.type='entity' "
            "AND n.rowid NOT IN (SELECT entity FROM synonymy_done) ORDER BY n.rowid")]

    def mark_synonymy_done(self, rowids: Sequence[int]) -> None:
        self.con.executemany("INSERT OR IGNORE INTO synonymy_done(entity) VALUES (?)", [(int(r),) for r in rowids])

    # ---- LLM cache ----------------------------------------------------------------------
    def cache_get(self, key: str) -> str | None:
        row = self.con.execute("SELECT response FROM llm_cache WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def cache_put(self, key: str, model: str, response: str) -> None:
        with self.write_lock:
            self.con.execute(
                "INSERT OR REPLACE INTO llm_cache(key, model, response, created_at) VALUES (?,?,?,?)",
                (key, model, response, now()))

    # ---- enrichment log -----------------------------------------------------------------
    def enrich_status(self, step: str) -> dict[int, tuple[str, str]]:
        """node -> (status, input_hash) for one step."""
        return {n: (s, h) for n, s, h in self.con.execute(
            "SELECT node, status, input_hash FROM enrich_log WHERE step=?", (step,))}

    def log_enrich(self, node: int, step: str, status: str, reason: str, attempts: int, input_hash: str) -> None:
        self.con.execute(
            "INSERT INTO enrich_log(node, step, status, reason, attempts, input_hash, updated_at) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT(node, step) DO UPDATE SET status=excluded.status, "
            "reason=excluded.reason, attempts=enrich_log.attempts + excluded.attempts, "
            "input_hash=excluded.input_hash, updated_at=excluded.updated_at",
            (node, step, status, reason[:2000], attempts, input_hash, now()))

    def enrich_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for step, status, n in self.con.execute(
                "SELECT step, status, count(*) FROM enrich_log GROUP BY step, status"):
            out.setdefault(step, {})[status] = n
        return out

    def enrich_failures(self, step: str | None = None) -> list[tuple[int, str, str]]:
        q = "SELECT node, step, reason FROM enrich_log WHERE status='failed'"
        return self.con.execute(q + (" AND step=?" if step else ""), (step,) if step else ()).fetchall()

    def nodes_of_type(self, kinds: Sequence[str]) -> list[int]:
        return [r for (r,) in self.con.execute(
            f"SELECT rowid FROM nodes WHERE type IN ({_marks(len(kinds))}) ORDER BY rowid", list(kinds))]
