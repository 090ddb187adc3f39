-- 0003: the loaded graph, persisted. The CSR arrays, node types and fact endpoints as one
-- blob, keyed by the graph version that every committed write bumps: start-up reads it in
-- one go instead of rebuilding the graph from millions of edge rows.
CREATE TABLE graph_cache (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  data    BLOB NOT NULL
);
