-- Collections (CONTRACT §9): private (the owner's) or shared (the group's), at most 300 assets each. `basket` marks
-- a user's SELECTED_ASSETS, made on first use, one per user. Memberships go with the asset (a purge removes them)
-- and with the collection.
CREATE TABLE collections (
  id         text PRIMARY KEY,
  group_id   integer NOT NULL,
  owner_id   integer NOT NULL,
  name       text NOT NULL,
  shared     boolean NOT NULL DEFAULT false,
  basket     boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX collections_basket_idx ON collections (group_id, owner_id) WHERE basket;
CREATE INDEX collections_group_idx ON collections (group_id, created_at, id);

CREATE TABLE collection_assets (
  collection_id text NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
  asset_id      text NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
  -- The order assets were added in (a page lists them so).
  seq           bigserial,
  added_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, asset_id)
);
CREATE INDEX collection_assets_asset_idx ON collection_assets (asset_id);

-- Versions of the membership messages (`dam.collections.<group>.asset.<id>`): taken under the asset's lock, so
-- they grow with every change of one asset's memberships.
CREATE SEQUENCE collection_membership_version;
