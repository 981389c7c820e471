-- The asset record: metadata is its only writer. Every query is scoped by group_id (the tenant).
CREATE TABLE assets (
  id             text PRIMARY KEY,
  group_id       integer NOT NULL,
  creator_id     integer NOT NULL,
  name           text NOT NULL,
  size           bigint NOT NULL CHECK (size >= 0),
  checksum       text NOT NULL,
  content_type   text NOT NULL,
  status         text NOT NULL CHECK (status IN ('OK', 'NOT_READY', 'ERROR', 'ARCHIVED')),
  metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
  data           jsonb NOT NULL DEFAULT '{}'::jsonb,
  data_schema_id integer NOT NULL DEFAULT 0,
  conversions    jsonb NOT NULL DEFAULT '{}'::jsonb,
  addons_info    jsonb NOT NULL DEFAULT '{}'::jsonb,
  errors         jsonb,
  object_key     text NOT NULL,
  upload_time    timestamptz NOT NULL DEFAULT now(),
  update_time    timestamptz NOT NULL DEFAULT now(),
  deleted_at     timestamptz
);

CREATE INDEX assets_group_upload_time_idx ON assets (group_id, upload_time);

-- Consumer de-duplication: a message id is recorded in the same transaction as the change it caused.
CREATE TABLE processed_messages (
  id           text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
