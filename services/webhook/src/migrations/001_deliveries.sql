-- The webhook service's records (CONTRACT §10): every asset event it has seen (for reissues), and every delivery
-- to every URL with its attempts. Pending retries live here, so a restart of the service or of NATS loses none.
CREATE TABLE events (
  id          text PRIMARY KEY,          -- the event id (its Nats-Msg-Id)
  group_id    integer NOT NULL,
  asset_id    text NOT NULL,
  type        text NOT NULL,
  time        timestamptz NOT NULL,
  seq         bigint NOT NULL,           -- ASSET_EVENTS sequence: the order of one asset's events
  creator_id  integer,                   -- the asset's creator (deletion payloads do not say: from asset_creators)
  body        text NOT NULL              -- the payload exactly as delivered
);
CREATE INDEX events_group_time_idx ON events (group_id, time);

-- Who created each asset, learnt from the asset data of its events (reissues send a user's assets only).
CREATE TABLE asset_creators (
  asset_id   text PRIMARY KEY,
  creator_id integer NOT NULL
);

CREATE TABLE deliveries (
  id              bigserial PRIMARY KEY,
  webhook_id      text NOT NULL,           -- the same on every attempt of one message
  group_id        integer NOT NULL,
  event_id        text NOT NULL,
  event_type      text NOT NULL,
  asset_id        text NOT NULL,
  url             text NOT NULL,
  seq             bigint NOT NULL,         -- deliveries of one asset to one URL go out in this order
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_until     timestamptz,             -- an attempt in flight (a crashed sender's lease runs out)
  last_status     integer,
  last_error      text,
  reissue_job_id  integer,
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,
  UNIQUE (webhook_id, url)
);
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX deliveries_order_idx ON deliveries (url, asset_id, seq) WHERE status = 'pending';
CREATE INDEX deliveries_log_idx ON deliveries (group_id, id DESC);

CREATE TABLE delivery_attempts (
  delivery_id bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt     integer NOT NULL,
  at          timestamptz NOT NULL,
  status      integer,
  error       text,
  duration_ms integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
