-- What the asset's addons found (the envelope's `addon_terms`): object labels, for the `tags` facet, and, with the
-- words of its text, keyword-searchable at weight C.
ALTER TABLE search_index ADD COLUMN labels text[] NOT NULL DEFAULT '{}';
