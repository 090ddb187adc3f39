-- 0002: the semantic layer (entities, facts) and the enrichment bookkeeping.

-- Which chunk mentions which entity: the reference count that keeps an entity alive.
CREATE TABLE chunk_entities (
  chunk  INTEGER NOT NULL,
  entity INTEGER NOT NULL,
  source TEXT NOT NULL,
  PRIMARY KEY (chunk, entity)
) WITHOUT ROWID;
CREATE INDEX chunk_entities_entity ON chunk_entities(entity);

-- OpenIE triples; vectors only (vec_fact), never graph nodes. `chunk` is the source passage.
CREATE TABLE facts (
  rowid    INTEGER PRIMARY KEY,
  head     INTEGER NOT NULL,
  relation TEXT NOT NULL,
  tail     INTEGER NOT NULL,
  text     TEXT NOT NULL,
  chunk    INTEGER NOT NULL,
  source   TEXT NOT NULL,
  embedded INTEGER NOT NULL DEFAULT 0,
  UNIQUE (chunk, head, relation, tail)
);
CREATE INDEX facts_chunk ON facts(chunk);
CREATE INDEX facts_pair ON facts(head, tail);
CREATE INDEX facts_embedded ON facts(embedded);

-- Every LLM call, keyed by a hash of model, messages and parameters: a re-run is free,
-- and a teammate's copy of the file carries the cache.
CREATE TABLE llm_cache (
  key        TEXT PRIMARY KEY,
  model      TEXT NOT NULL,
  response   TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Per node and step: done / failed (with the reason) / offline, and the input it saw.
CREATE TABLE enrich_log (
  node       INTEGER NOT NULL,
  step       TEXT NOT NULL,
  status     TEXT NOT NULL,
  reason     TEXT NOT NULL DEFAULT '',
  attempts   INTEGER NOT NULL DEFAULT 0,
  input_hash TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL,
  PRIMARY KEY (node, step)
) WITHOUT ROWID;
CREATE INDEX enrich_log_status ON enrich_log(step, status);

-- Entities whose synonymy neighbours were computed (incremental runs do only new ones).
CREATE TABLE synonymy_done (
  entity INTEGER PRIMARY KEY
);
