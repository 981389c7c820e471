-- The lease of each resumable upload being written (adapters/tus-locker.ts): one row per upload, held by one request
-- of one replica (`holder`: its host name and process, for operators; `token`: that request's own lease) until
-- `expires_at`. The holder renews it every third of the TTL while it writes and deletes it when done; a replica that
-- died holding one leaves it until `expires_at`, when the next request for that upload takes it over. Expired rows of
-- uploads nobody resumes are removed by the tus-expiry poller. In PostgreSQL (before: the NATS KV bucket TUS_LOCKS),
-- so a tus PATCH needs no NATS (issue 35).
CREATE TABLE tus_locks (
  id text PRIMARY KEY,
  holder text NOT NULL,
  token text NOT NULL,
  acquired_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX tus_locks_expires_idx ON tus_locks (expires_at);
