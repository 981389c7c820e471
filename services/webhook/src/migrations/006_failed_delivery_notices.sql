-- Login's notifications (issue 32): a delivery that gave up after its last attempt tells the group's users who manage
-- its settings at their next login. The notice (dam.internal.notices.webhook-failed, libs/events notice.event.ts) is
-- written into the outbox by the statement that marks the delivery failed, whichever code runs it: it commits or
-- rolls back with that, once per delivery (the notice id is the delivery's). auth keeps one message per URL between
-- two logins however many deliveries to it gave up.
CREATE FUNCTION deliveries_failed_notice() RETURNS trigger AS $$
DECLARE
  notice_id text := 'webhook-failed-' || NEW.id;
BEGIN
  INSERT INTO outbox (id, subject, payload)
  VALUES (notice_id, 'dam.internal.notices.webhook-failed', jsonb_build_object(
    'id', notice_id,
    'kind', 'webhook-failed',
    'group_id', NEW.group_id,
    'url', NEW.url,
    'attempts', NEW.attempts,
    'last_error', coalesce(NEW.last_error, 'HTTP ' || NEW.last_status),
    'event_type', NEW.event_type,
    'asset_id', NEW.asset_id,
    'at', to_char(coalesce(NEW.finished_at, now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
  ON CONFLICT (id) DO NOTHING;
  -- Wakes the outbox relay at commit, as writeOutbox does.
  PERFORM pg_notify('dam_outbox', '');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER deliveries_failed_notice AFTER UPDATE OF status ON deliveries FOR EACH ROW
  WHEN (NEW.status = 'failed' AND OLD.status <> 'failed')
  EXECUTE FUNCTION deliveries_failed_notice();
