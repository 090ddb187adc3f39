-- 0007: the text around a code block or table is derived, not stored. Each code and table node
-- had kept `context_lines` lines before and after it on its page in meta.context (about 900
-- characters a node: 13 MB, a third of the node bytes of the whole ArkUI-X index), which its
-- page's chunks already hold by line range. dgrag/ingest/context.py derives it from them (the
-- LLM summary's input; the extractive summary is computed at ingest from the parsed page). An
-- image keeps its context (an image node is shared by the pages that show it).
UPDATE nodes SET meta = json_remove(meta, '$.context')
WHERE type IN ('code', 'table') AND json_extract(meta, '$.context') IS NOT NULL;
