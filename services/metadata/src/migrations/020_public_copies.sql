-- Public access at any scale (issue 33, security review F14/F15). A published key is no longer named in a bucket
-- policy listing every public object of every tenant (S3 servers cap a policy at about 20 KiB, a few hundred
-- objects: past that, publishing failed for everyone and revocations were no longer written). It is copied,
-- server-side, under its own folder of the one public prefix (`public/<group>/<asset>/<token>/`), which a constant
-- bucket policy statement makes readable; revoking it removes that folder (through `object_deletions`).
CREATE TABLE public_copies (
  -- `public/<group>/<asset>/<token>/`: everything under it is this publication's copy.
  prefix    text COLLATE "C" PRIMARY KEY,
  group_id  integer NOT NULL,
  asset_id  text NOT NULL,
  key       text NOT NULL,
  -- What is copied: one object, or a multi-file conversion's folder (ending in `/`, copied whole).
  source    text NOT NULL,
  -- The object the public URL names, under `prefix`: the file's name, or `<folder name>/<descriptor's path in it>`.
  entry     text NOT NULL,
  -- NULL until the copy is complete; metadata's public-copies poller finishes any left (an older install's, a crash).
  copied_at timestamptz,
  -- The last copy that failed (the poller waits a minute before it tries that one again).
  failed_at timestamptz,
  UNIQUE (group_id, asset_id, key)
);
CREATE INDEX public_copies_pending_idx ON public_copies (failed_at NULLS FIRST) WHERE copied_at IS NULL;

-- An older install's public objects move over once: each gets its folder, copied by the poller after the start,
-- which then points `urls.public` at the copy and replaces the old policy with the constant one.
INSERT INTO public_copies (prefix, group_id, asset_id, key, source, entry)
SELECT 'public/' || p.group_id || '/' || p.asset_id || '/' || replace(gen_random_uuid()::text, '-', '') || '/',
       p.group_id, p.asset_id, p.key, m.source, m.entry
FROM public_objects p
JOIN assets a ON a.group_id = p.group_id AND a.id = p.asset_id
CROSS JOIN LATERAL (
  SELECT CASE WHEN p.object_key LIKE '%*' THEN left(p.object_key, -1) ELSE p.object_key END AS source,
         CASE WHEN p.object_key LIKE '%*' THEN regexp_replace(left(p.object_key, -2), '^.*/', '') || '/' || substr(a.conversions -> p.key ->> 'object_key', length(p.object_key))
              ELSE regexp_replace(p.object_key, '^.*/', '') END AS entry
) m
WHERE m.entry IS NOT NULL AND m.entry <> ''
ON CONFLICT DO NOTHING;

DROP TABLE public_objects;
DROP TABLE public_policy_state;
