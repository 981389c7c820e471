-- Near-duplicates (CONTRACT §14) without scanning every asset: the 64-bit perceptual hash as a number, and
-- split into four 16-bit bands, each indexed. Two hashes within d bits differ by at most floor(d/4) bits in
-- at least one band (pigeonhole), so a query looks up each band's neighbours within that many bits and checks
-- the exact distance only of those candidates (multi-index hashing; distances up to 11, wider ones read the
-- group: see domain/near-duplicates.ts).
ALTER TABLE assets
  ADD COLUMN phash bigint GENERATED ALWAYS AS (
    CASE WHEN metadata->>'phash' ~ '^[0-9a-f]{16}$' THEN ('x' || (metadata->>'phash'))::bit(64)::bigint END) STORED,
  ADD COLUMN phash_b0 integer GENERATED ALWAYS AS (
    CASE WHEN metadata->>'phash' ~ '^[0-9a-f]{16}$' THEN ('x' || substr(metadata->>'phash', 1, 4))::bit(16)::integer END) STORED,
  ADD COLUMN phash_b1 integer GENERATED ALWAYS AS (
    CASE WHEN metadata->>'phash' ~ '^[0-9a-f]{16}$' THEN ('x' || substr(metadata->>'phash', 5, 4))::bit(16)::integer END) STORED,
  ADD COLUMN phash_b2 integer GENERATED ALWAYS AS (
    CASE WHEN metadata->>'phash' ~ '^[0-9a-f]{16}$' THEN ('x' || substr(metadata->>'phash', 9, 4))::bit(16)::integer END) STORED,
  ADD COLUMN phash_b3 integer GENERATED ALWAYS AS (
    CASE WHEN metadata->>'phash' ~ '^[0-9a-f]{16}$' THEN ('x' || substr(metadata->>'phash', 13, 4))::bit(16)::integer END) STORED;

CREATE INDEX assets_phash_b0_idx ON assets (group_id, phash_b0);
CREATE INDEX assets_phash_b1_idx ON assets (group_id, phash_b1);
CREATE INDEX assets_phash_b2_idx ON assets (group_id, phash_b2);
CREATE INDEX assets_phash_b3_idx ON assets (group_id, phash_b3);
