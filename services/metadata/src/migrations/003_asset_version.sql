-- Every change of an asset row bumps its version; every asset event carries the version it describes, so read
-- models (search, webhooks, subscribers) apply events last-writer-wins whatever order they arrive in.
ALTER TABLE assets ADD COLUMN version bigint NOT NULL DEFAULT 1;
