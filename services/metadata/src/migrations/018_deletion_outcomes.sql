-- The deletion callback tells the outcome (the deletion payload's status: OK, MAYBE, ERROR with `errors`), so a
-- `file-deleted` whose Delete queued object removals is held here, ready-made, until each of them is settled:
-- removed, given up after the queue's attempts (ERROR: its key and reason), or cancelled because the key became
-- live again (undelete, a conversion added again: MAYBE). One asset's held events go out in the order of their
-- Deletes; a later `file-deleted` of an asset with one held waits behind it.
CREATE TABLE deletion_outcomes (
  id         bigserial PRIMARY KEY,
  group_id   integer NOT NULL,
  asset_id   text NOT NULL,
  -- The outbox entry as the Delete wrote it ({id, subject, payload}); the release fills in the outcome.
  entry      jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deletion_outcomes_asset_idx ON deletion_outcomes (asset_id, id);

CREATE TABLE deletion_outcome_objects (
  outcome_id bigint NOT NULL REFERENCES deletion_outcomes (id) ON DELETE CASCADE,
  -- An `object_deletions` key (a prefix ends in `/`), and the Delete's key it belongs to (`original`, `thumb`...).
  key        text NOT NULL,
  label      text NOT NULL,
  state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'removed', 'failed', 'cancelled')),
  error      text,
  PRIMARY KEY (outcome_id, key)
);
CREATE INDEX deletion_outcome_objects_pending_idx ON deletion_outcome_objects (key) WHERE state = 'pending';
