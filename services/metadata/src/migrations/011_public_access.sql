-- Set Public Access: the anonymous URL of each public key on the asset (`urls.public`), and every public object
-- of the bucket, from which one bucket policy naming exactly those objects is written (never the bucket).
ALTER TABLE assets ADD COLUMN public_urls jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE TABLE public_objects (
  object_key text PRIMARY KEY,
  group_id   integer NOT NULL,
  asset_id   text NOT NULL,
  key        text NOT NULL
);
CREATE INDEX public_objects_asset_idx ON public_objects (group_id, asset_id);
-- What the bucket policy holds now (md5 of its sorted object keys), shared by every replica's writer.
CREATE TABLE public_policy_state (
  id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  fingerprint text NOT NULL
);
