-- The asset as its last event carried it (`doc`, what an `extended` page shows) in a table of its own (issue 33):
-- a keyword search ranks every match, reading each matched row of search_index, and `doc` was more than half of a
-- row (about 480 of 870 bytes at 100,000 assets), so the scan read twice the pages it needs. search_index.doc stays,
-- NULL, for replicas of the previous release during a rolling upgrade (readers take search_docs' doc first).
CREATE TABLE search_docs (
  asset_id text PRIMARY KEY,
  doc      jsonb NOT NULL
);
INSERT INTO search_docs (asset_id, doc) SELECT asset_id, doc FROM search_index WHERE doc IS NOT NULL;
-- Every row written again without its doc, then the table rewritten with only those narrow versions, a group's rows
-- together (about 4 s at 100,000 assets; search waits for its migrations before it serves).
UPDATE search_index SET doc = NULL WHERE doc IS NOT NULL;
CLUSTER search_index USING search_index_group_upload_idx;
