-- What a processing job did not make because it does not apply to the original (a video rendition that would
-- upscale the source), key → why; NULL when nothing was skipped.
ALTER TABLE jobs ADD COLUMN skipped jsonb;
