-- 0009: what was asked, what was answered, and what the askers thought of it (the docs team's
-- loop: feedback, the gap report). Rows here are not part of the graph: writing them does not move
-- the graph version (store/asked.py writes outside Store.transaction).
-- `asked` holds one row per answer given; it is written when question logging is on (a setting,
-- with a retention period), or when feedback names an answer the server still holds in memory.
CREATE TABLE asked (
  id          TEXT PRIMARY KEY,            -- the answer's id (the `/v1` response id, the chat's, the widget's)
  asked_at    TEXT NOT NULL,               -- UTC, ISO 8601 to the second
  channel     TEXT NOT NULL,               -- 'chat' | 'widget' | 'rest' | 'v1' | 'mcp' | 'cli' | 'import'
  question    TEXT NOT NULL,
  language    TEXT NOT NULL DEFAULT '',    -- the question's language ('en', 'zh', '' unknown)
  sections    TEXT NOT NULL DEFAULT '[]',  -- JSON list of the retrieved node ids, best first
  confidence  REAL,                        -- retrieve/confidence.py's score, NULL when not computed
  unanswered  INTEGER NOT NULL DEFAULT 0,  -- 1: the answer said the docs don't cover the question
  answer      TEXT NOT NULL DEFAULT '',
  index_state TEXT NOT NULL DEFAULT ''     -- what the index held when it answered (commit, time, pages)
);
CREATE INDEX asked_at ON asked(asked_at);

-- One row per verdict: a thumb (+1 / -1, or 0 for a comment alone) and an optional comment.
CREATE TABLE feedback (
  id         INTEGER PRIMARY KEY,
  answer_id  TEXT NOT NULL,                -- asked.id (kept even where that row has been pruned)
  given_at   TEXT NOT NULL,
  rating     INTEGER NOT NULL CHECK (rating IN (-1, 0, 1)),
  comment    TEXT NOT NULL DEFAULT '',
  channel    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX feedback_answer ON feedback(answer_id);
