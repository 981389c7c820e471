-- The trash state keeps its own version: a deletion applied before the asset's earlier events no longer stops
-- them from filling the row, so an asset deleted while its first events were still in flight is found in the trash.
ALTER TABLE search_index ADD COLUMN trash_version integer NOT NULL DEFAULT 0;
UPDATE search_index SET trash_version = version;
