-- Jobs (CONTRACT §6): every asynchronous piece of work on assets, owned by metadata and written in the same
-- transaction as the asset change that asks for it. Steps are `[{name, status, started_at, finished_at}]`
-- (video transcodes will have preprocess, transcodes, addons, postprocess). A worker holds a job by lease;
-- when the lease runs out another worker may take it up, so no job stays IN_PROGRESS for ever.
CREATE TABLE jobs (
  id          bigserial PRIMARY KEY,
  group_id    integer NOT NULL,
  type        text NOT NULL,
  status      text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR')),
  asset_ids   text[] NOT NULL DEFAULT '{}',
  steps       jsonb NOT NULL DEFAULT '[]'::jsonb,
  progress    smallint NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
  error       text,
  created_by  integer,
  lease_owner text,
  lease_until timestamptz,
  attempts    integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_group_created_idx ON jobs (group_id, created_at DESC, id DESC);
CREATE INDEX jobs_asset_ids_idx ON jobs USING gin (asset_ids);

-- Statuses only move forward (QUEUED → IN_PROGRESS → COMPLETED | ERROR), whatever code runs the update.
CREATE FUNCTION jobs_status_forward() RETURNS trigger AS $$
DECLARE
  rank_old int := CASE OLD.status WHEN 'QUEUED' THEN 0 WHEN 'IN_PROGRESS' THEN 1 ELSE 2 END;
  rank_new int := CASE NEW.status WHEN 'QUEUED' THEN 0 WHEN 'IN_PROGRESS' THEN 1 ELSE 2 END;
BEGIN
  IF rank_new < rank_old OR (rank_old = 2 AND NEW.status <> OLD.status) THEN
    RAISE EXCEPTION 'job % cannot move from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  NEW.updated_at := now();
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER jobs_status_forward BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_status_forward();
