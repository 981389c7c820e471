-- The pending-upload journal (adapters/pending-upload.journal.ts): one row per object stored but not yet registered
-- with metadata, refreshed by its request; a row not written for ORPHAN_GRACE_MS belongs to a process that died, and
-- the orphan reaper removes its object unless metadata has the asset. In PostgreSQL (before: a NATS KV bucket), so an
-- upload needs no NATS (issue 35).
CREATE SEQUENCE pending_upload_revisions;
CREATE TABLE pending_uploads (
  id text PRIMARY KEY,
  upload jsonb NOT NULL,
  revision bigint NOT NULL,
  written_at timestamptz NOT NULL
);
CREATE INDEX pending_uploads_written_idx ON pending_uploads (written_at);
