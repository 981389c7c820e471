-- Asset schemas (CONTRACT §5): JSON Schema 2020-12 documents per group. Schema 0 (the default, with the
-- searchable `service_search_txt`) is built in and never stored.
CREATE TABLE asset_schemas (
  id                 serial PRIMARY KEY,
  group_id           integer NOT NULL,
  name               text NOT NULL,
  schema             jsonb NOT NULL,
  service_properties jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX asset_schemas_group_idx ON asset_schemas (group_id, id);

-- Update Data requests waiting for their turn (another update of the asset was in flight, or `async=1`),
-- applied in id order per asset by the `data-updates` poller.
CREATE TABLE data_updates (
  id         bigserial PRIMARY KEY,
  group_id   integer NOT NULL,
  asset_id   text NOT NULL,
  principal  jsonb NOT NULL,
  body       jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX data_updates_asset_idx ON data_updates (group_id, asset_id, id);
