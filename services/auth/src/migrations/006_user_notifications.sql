-- Login's `notifications` (the specification: "messages since last login"): each user's messages, written by auth
-- alone, from its own records (API keys) and from the notices other services publish (failed jobs, failing
-- webhooks; dam.internal.notices.*). A login returns the user's unseen messages and marks them seen; rows older
-- than NOTIFICATION_RETENTION_DAYS go, seen or not.
CREATE TABLE user_notifications (
  id         bigserial PRIMARY KEY,
  user_id    integer NOT NULL REFERENCES users (id),
  -- Messages of one topic (a webhook URL) between two logins are one message: the latest, with how many it stands for.
  topic      text,
  message    text NOT NULL,
  repeats    integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  seen_at    timestamptz
);
CREATE INDEX user_notifications_unseen_idx ON user_notifications (user_id, created_at, id) WHERE seen_at IS NULL;
CREATE UNIQUE INDEX user_notifications_topic_key ON user_notifications (user_id, topic) WHERE seen_at IS NULL AND topic IS NOT NULL;
CREATE INDEX user_notifications_created_idx ON user_notifications (created_at);

-- The notices already turned into messages, by their message id: a notice published or delivered twice counts once.
-- Kept as long as the messages.
CREATE TABLE consumed_notices (
  id          text PRIMARY KEY,
  consumed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consumed_notices_at_idx ON consumed_notices (consumed_at);
