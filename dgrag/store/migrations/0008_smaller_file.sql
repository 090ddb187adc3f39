-- 0008: a smaller file. Indexes no query needs, one vector for facts that share it, and the
-- centres of int8 tables.
-- `facts_chunk` (facts by chunk) repeats the first column of the UNIQUE (chunk, head, relation,
-- tail) index, which serves the same lookups. `edges_type` served the few statements that pick
-- edges by type (the jump edges rebuilt, the semantic layer's edges dropped, the counts), each
-- run once per ingest or enrichment and as fast as a scan of the table; the one per-page query
-- (images no chunk contains) goes through edges_dst instead. `enrich_log_status` served reads
-- of a whole step's rows, a scan either way. `facts_embedded` indexed every fact by a flag that
-- only the pending ones (embedded = 0) are looked up by: a partial index holds those alone.
-- Together 3.8 MB of the whole ArkUI-X index.
DROP INDEX IF EXISTS facts_chunk;
DROP INDEX IF EXISTS edges_type;
DROP INDEX IF EXISTS enrich_log_status;
DROP INDEX IF EXISTS facts_embedded;
CREATE INDEX facts_pending ON facts(embedded) WHERE embedded = 0;

-- Facts with the same text have the same vector. A compact copy (`dgrag snapshot`) stores it
-- once, under the lowest of their rowids, and lists the others here (store/vectors.py reads
-- them as if each had its own vector). A quarter of the ArkUI-X facts: 3.8 MB of int8 vectors.
CREATE TABLE fact_vector_alias (
  fact    INTEGER PRIMARY KEY,  -- a fact without a vector row of its own
  same_as INTEGER NOT NULL      -- the fact whose vector it has
);
CREATE INDEX fact_vector_alias_same_as ON fact_vector_alias(same_as);

-- The centre of an int8 table written centred (`dgrag snapshot`): each vector is stored as its
-- difference from `mean` in units of `step` (store/vectors.py). A table without a row here is
-- float32, or int8 scaled per row (a compact copy from before).
CREATE TABLE vector_centre (
  kind TEXT PRIMARY KEY,  -- the vector table: 'chunk' for vec_chunk, ...
  mean BLOB NOT NULL,     -- float32[dim]: the mean of the table's vectors when it was written
  step REAL NOT NULL      -- the value of one code unit
);
