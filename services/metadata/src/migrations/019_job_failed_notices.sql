-- Login's notifications (issue 32): a job a user asked for that ends in ERROR tells them at their next login. The
-- notice (dam.internal.notices.job-failed, libs/events notice.event.ts) is written into the outbox by the statement
-- that ends the job, whichever it is (a worker's FAILED report, the lease sweep giving up, a local job, finishing the
-- open jobs of an asset): it commits or rolls back with the job's status, and no path can forget it. Once per job:
-- statuses only move forward, and the notice id is the job's.
CREATE FUNCTION jobs_failed_notice() RETURNS trigger AS $$
DECLARE
  notice_id text := 'job-failed-' || NEW.id;
  first_asset text;
BEGIN
  SELECT name INTO first_asset FROM assets WHERE id = NEW.asset_ids[1] AND group_id = NEW.group_id;
  INSERT INTO outbox (id, subject, payload)
  VALUES (notice_id, 'dam.internal.notices.job-failed', jsonb_build_object(
    'id', notice_id,
    'kind', 'job-failed',
    'group_id', NEW.group_id,
    'user_id', NEW.created_by,
    'job_id', NEW.id,
    'job_type', NEW.type,
    -- An ingest's asset may not exist yet: the file name it was asked to take.
    'asset_name', coalesce(first_asset, NEW.params->>'name'),
    'asset_count', coalesce(cardinality(NEW.asset_ids), 0),
    'error', NEW.error,
    'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
  ON CONFLICT (id) DO NOTHING;
  -- Wakes the outbox relays at commit, as writeOutbox does.
  PERFORM pg_notify('dam_outbox', '');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER jobs_failed_notice_on_update AFTER UPDATE OF status ON jobs FOR EACH ROW
  WHEN (NEW.status = 'ERROR' AND OLD.status <> 'ERROR' AND NEW.created_by > 0)
  EXECUTE FUNCTION jobs_failed_notice();
CREATE TRIGGER jobs_failed_notice_on_insert AFTER INSERT ON jobs FOR EACH ROW
  WHEN (NEW.status = 'ERROR' AND NEW.created_by > 0)
  EXECUTE FUNCTION jobs_failed_notice();
