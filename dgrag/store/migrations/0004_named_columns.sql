-- 0004: columns named for what they hold. An entity's display name and normalised name had
-- been kept in `breadcrumb` and `content_hash`, and a chunk's prose (its text without code,
-- tables and images: what is embedded and read by OpenIE) in meta["filter"]; they move to
-- their own columns, and the old places are cleared.
ALTER TABLE nodes ADD COLUMN prose TEXT;
ALTER TABLE nodes ADD COLUMN entity_name TEXT;
ALTER TABLE nodes ADD COLUMN entity_norm TEXT;

UPDATE nodes SET prose = coalesce(json_extract(meta, '$.filter'), ''), meta = json_remove(meta, '$.filter')
WHERE type = 'chunk';

UPDATE nodes SET entity_name = breadcrumb, entity_norm = content_hash, breadcrumb = '', content_hash = NULL,
                 meta = json_remove(meta, '$.name', '$.norm')
WHERE type = 'entity';

CREATE INDEX nodes_entity_norm ON nodes(entity_norm) WHERE entity_norm IS NOT NULL;
