-- The accessID the `cdn` links a key mints carry (security review F17): resolved by /internal/v1/access/:id only
-- while the key is not revoked, so revoking a key ends its links, as rotating the user's accessID ends theirs
-- (and every one of their keys', which is rotated with it). Links minted signed in carry the user's accessID.
ALTER TABLE api_keys ADD COLUMN access_id text;
UPDATE api_keys SET access_id = replace(gen_random_uuid()::text, '-', '');
ALTER TABLE api_keys ALTER COLUMN access_id SET NOT NULL;
CREATE UNIQUE INDEX api_keys_access_id_key ON api_keys (access_id);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);
