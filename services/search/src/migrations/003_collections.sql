-- Collections (CONTRACT §9) from the COLLECTIONS stream: each asset's collections (whole, versioned), and who
-- sees each collection. A membership seen before the asset leaves an unindexed row, as a deletion does.
ALTER TABLE search_index
  ADD COLUMN collection_ids      text[] NOT NULL DEFAULT '{}',
  ADD COLUMN collections_version bigint NOT NULL DEFAULT 0;
CREATE INDEX search_index_collections_idx ON search_index USING gin (collection_ids);

CREATE TABLE search_collections (
  collection_id text PRIMARY KEY,
  group_id      integer NOT NULL,
  owner_id      integer NOT NULL,
  shared        boolean NOT NULL,
  deleted       boolean NOT NULL
);
