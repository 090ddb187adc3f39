-- 0001: the structural index. Every node, edge, image and log row lives in this one file.
-- Per-type vector tables (vec_file, vec_chunk, ...) are created by the store once the
-- embedding dimension is known (a vec0 table fixes its dimension at creation).
CREATE TABLE schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
);

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE nodes (
  rowid          INTEGER PRIMARY KEY,
  id             TEXT NOT NULL UNIQUE,
  type           TEXT NOT NULL CHECK (type IN ('file','chunk','code','table','image','entity')),
  text           TEXT NOT NULL DEFAULT '',
  summary        TEXT,
  summary_source TEXT,
  embed_hash     TEXT,
  breadcrumb     TEXT NOT NULL DEFAULT '',
  source_path    TEXT,
  line_start     INTEGER,
  line_end       INTEGER,
  source_url     TEXT,
  language       TEXT,
  content_hash   TEXT,
  meta           TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX nodes_type ON nodes(type);
CREATE INDEX nodes_source_path ON nodes(source_path);
CREATE INDEX nodes_embed_hash ON nodes(embed_hash);

-- Stored once per pair; the graph treats every edge as undirected (the seed's
-- "contains adds the reverse edge").
CREATE TABLE edges (
  src    INTEGER NOT NULL,
  dst    INTEGER NOT NULL,
  type   TEXT NOT NULL,
  weight REAL NOT NULL DEFAULT 1.0,
  PRIMARY KEY (src, dst, type)
) WITHOUT ROWID;
CREATE INDEX edges_dst ON edges(dst);
CREATE INDEX edges_type ON edges(type);

-- Markdown links chunk -> page; jump edges are derived from these once the target exists.
CREATE TABLE links (
  src         INTEGER NOT NULL,
  target_path TEXT NOT NULL,
  anchor      TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (src, target_path, anchor)
) WITHOUT ROWID;
CREATE INDEX links_target ON links(target_path);

-- Image bytes, so the file is portable. Near-duplicates point at their representative.
CREATE TABLE images (
  sha256         TEXT PRIMARY KEY,
  data           BLOB NOT NULL,
  format         TEXT,
  width          INTEGER,
  height         INTEGER,
  dhash          TEXT,
  phash          TEXT,
  representative TEXT
);

-- The ingest log: one row per source file with its hash and outcome.
CREATE TABLE files (
  path         TEXT PRIMARY KEY,
  content_hash TEXT,
  status       TEXT NOT NULL,
  reason       TEXT,
  nodes        INTEGER NOT NULL DEFAULT 0,
  updated_at   TEXT NOT NULL
);
