-- Every committed change of an asset's record is announced on the channel `asset_changed` with the asset's id
-- (issue 33): metadata relays the notices to the gateways, whose Get Data cache drops what it kept of those assets.
-- A trigger, not the code paths that write: none can be missed (uploads, job reports, addons, pollers, bulk updates).
-- NOTIFY is delivered at commit, once per distinct id in a transaction, and never for a rolled-back change.
CREATE FUNCTION notify_asset_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('asset_changed', OLD.id);
  ELSE
    PERFORM pg_notify('asset_changed', NEW.id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER assets_changed_notice AFTER INSERT OR UPDATE OR DELETE ON assets
  FOR EACH ROW EXECUTE FUNCTION notify_asset_changed();
