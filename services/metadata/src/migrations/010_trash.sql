-- Object-store deletions, written in the transaction that makes the bytes unreachable (delete, purge, replace)
-- and carried out by the `object-deletions` poller: a crash between the commit and the S3 call leaves a row,
-- never an orphan object. A transaction that makes such a key live again (undelete) removes its row first.
-- `not_before` delays a deletion (a replaced original stays readable for downloads already streaming it).
CREATE TABLE object_deletions (
  key        text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  not_before timestamptz NOT NULL DEFAULT now(),
  attempts   integer NOT NULL DEFAULT 0
);
CREATE INDEX object_deletions_due_idx ON object_deletions (not_before);

-- The trash of a group (purge), and uploads in a time range (bulk delete).
CREATE INDEX assets_group_trash_idx ON assets (group_id, deleted_at) WHERE deleted_at IS NOT NULL;
