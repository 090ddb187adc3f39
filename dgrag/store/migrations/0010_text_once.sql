-- 0010: a code block's or a table's text stored once. Its section's chunk holds the same text
-- (the chunk's text is the whole section, its code and tables included): 0.66 MB of the 1.84 MB
-- of VitePress's Markdown, 4.9 MB of the structural ArkUI-X index. A compact copy (`dgrag
-- snapshot`) leaves such a node's `text` empty and records where it lies in the chunk: the
-- chunk's rowid, the offset (in characters, from 0) and the length. store/nodes.py reads it
-- back from there, and writes it back into the node before the chunk's text changes or the
-- chunk goes (so a file indexed further after a snapshot loses nothing).
ALTER TABLE nodes ADD COLUMN text_in INTEGER;
ALTER TABLE nodes ADD COLUMN text_at INTEGER;
ALTER TABLE nodes ADD COLUMN text_len INTEGER;
CREATE INDEX nodes_text_in ON nodes(text_in) WHERE text_in IS NOT NULL;
