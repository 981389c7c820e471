-- Addon results (CONTRACT §6): what each addon found, kept with the asset (its access rules, trash and purge
-- apply as they are); `addons_info.<addon>.available` says which exist.
ALTER TABLE assets ADD COLUMN addon_results jsonb NOT NULL DEFAULT '{}'::jsonb;
