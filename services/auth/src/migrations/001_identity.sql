CREATE TABLE groups (
  id         serial PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id            serial PRIMARY KEY,
  group_id      integer NOT NULL REFERENCES groups (id),
  email         text NOT NULL,
  password_hash text NOT NULL,
  first_name    text NOT NULL DEFAULT '',
  last_name     text NOT NULL DEFAULT '',
  role_id       smallint NOT NULL CHECK (role_id BETWEEN 1 AND 4),
  disabled      boolean NOT NULL DEFAULT false,
  preferences   jsonb NOT NULL DEFAULT '{}'::jsonb,
  upload_key    text NOT NULL UNIQUE,
  access_id     text NOT NULL UNIQUE,
  last_login_at timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  -- Deleted users keep their row (assets still name them as creator_id) but can never log in again.
  deleted_at    timestamptz
);
-- Login is by email alone, so an email is unique across every group.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_group_idx ON users (group_id, id);

CREATE TABLE api_keys (
  id         text PRIMARY KEY,
  group_id   integer NOT NULL REFERENCES groups (id),
  user_id    integer NOT NULL REFERENCES users (id),
  name       text NOT NULL,
  role       text NOT NULL CHECK (role IN ('ADMIN', 'MANAGER', 'USER', 'CREATOR', 'ASSET_ADMIN')),
  key_hash   text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_group_idx ON api_keys (group_id, created_at);

CREATE TABLE settings (
  group_id   integer PRIMARY KEY REFERENCES groups (id),
  data       jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
