-- 0006: the approximate-nearest-neighbour index of a vector set, kept with the file (one file is
-- the whole index): past `fact_ann_min_vectors` facts the fact route searches an HNSW graph
-- instead of every vector, and building that graph takes minutes at a million vectors, so it
-- is stored rather than rebuilt at every start. It is a cache, like graph_cache: keyed by what
-- it indexes (the kind, the embedding model, the vector count and a fingerprint of the rowids
-- and vectors in row order), so an index of other vectors is seen as stale and rebuilt.
CREATE TABLE ann_index (
  kind        TEXT PRIMARY KEY,   -- the vectors indexed: 'fact'
  model       TEXT NOT NULL,      -- the embedding model of those vectors
  count       INTEGER NOT NULL,   -- vectors indexed
  fingerprint TEXT NOT NULL,      -- sha256 of their rowids and leading components, in row order
  library     TEXT NOT NULL,      -- the library, its version and parameters that wrote `ann_index_parts`
  bytes       INTEGER NOT NULL,   -- the serialized index's length (its parts joined)
  built_s     REAL NOT NULL,      -- seconds the build took
  updated_at  TEXT NOT NULL
);
-- the serialized index in parts: SQLite refuses a value over 1e9 bytes (SQLITE_MAX_LENGTH), and
-- an HNSW index of a few million int8 vectors is larger than that
CREATE TABLE ann_index_parts (
  kind TEXT NOT NULL,
  part INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (kind, part)
);
