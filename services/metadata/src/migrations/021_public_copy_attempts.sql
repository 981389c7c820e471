-- A public copy is made without holding a database connection through the S3 copy (issue 33: a burst of Set
-- Public Access from many groups would otherwise hold the whole pool): whoever copies first claims the row by its
-- attempt time, copies, then marks it copied if the row still stands (a revoked one's copy is removed at once).
-- The poller takes the rows not attempted for a minute: a failed copy, an interrupted one, an older install's.
ALTER TABLE public_copies RENAME COLUMN failed_at TO attempted_at;
ALTER INDEX public_copies_pending_idx RENAME TO public_copies_unattempted_idx;
