-- Usage statistics (CONTRACT §9), from the usage records other services publish on `dam.internal.usage.<metric>`.
-- A record's id is kept (for longer than NATS could deliver it again) so it is counted once.
CREATE TABLE usage_records (
  id          text PRIMARY KEY,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_received_idx ON usage_records (received_at);

-- Counters (api_requests, cdn_bytes, transcode_seconds, addon_runs), added up per hour, group and user.
CREATE TABLE usage_hours (
  group_id integer NOT NULL,
  metric   text NOT NULL,
  hour     timestamptz NOT NULL,
  user_id  integer NOT NULL,
  value    double precision NOT NULL,
  PRIMARY KEY (group_id, metric, hour, user_id)
);

-- Gauges (storage_bytes): the value at a time, per group and user; a bucket shows the latest value before its end.
CREATE TABLE usage_gauges (
  group_id integer NOT NULL,
  metric   text NOT NULL,
  user_id  integer NOT NULL,
  at       timestamptz NOT NULL,
  value    double precision NOT NULL,
  PRIMARY KEY (group_id, metric, user_id, at)
);
