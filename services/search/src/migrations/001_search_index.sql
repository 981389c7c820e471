-- The search read model (issue 9): one row per asset, built only from ASSET_EVENTS. `version` is the asset's
-- version of the last event applied: an older event never overwrites a newer state.
CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TABLE search_index (
  asset_id     text PRIMARY KEY,
  group_id     integer NOT NULL,
  version      integer NOT NULL,
  -- Known once a file-saved (or later) event carried the asset data; a deletion seen first leaves it false.
  indexed      boolean NOT NULL DEFAULT false,
  deleted      boolean NOT NULL DEFAULT false,
  status       text,
  name         text,
  content_type text,
  size         bigint,
  creator_id   integer,
  upload_time  timestamptz,
  update_time  timestamptz,
  data         jsonb NOT NULL DEFAULT '{}'::jsonb,
  doc          jsonb,
  tsv          tsvector NOT NULL DEFAULT ''::tsvector
);
CREATE INDEX search_index_tsv_idx ON search_index USING gin (tsv);
CREATE INDEX search_index_group_upload_idx ON search_index (group_id, upload_time DESC);
CREATE INDEX search_index_data_idx ON search_index USING gin (data jsonb_path_ops);

-- Stored result sets: at most 10,000 ids each, paged later.
CREATE TABLE result_sets (
  id          text PRIMARY KEY,
  group_id    integer NOT NULL,
  user_id     integer NOT NULL,
  ids         text[] NOT NULL,
  scores      real[] NOT NULL,
  capped      boolean NOT NULL,
  page_size   integer NOT NULL,
  extended    boolean NOT NULL,
  facets      jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX result_sets_expiry_idx ON result_sets (expires_at);
