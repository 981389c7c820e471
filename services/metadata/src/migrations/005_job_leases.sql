-- Jobs as the command path to workers: which worker kind runs a job (NULL: metadata runs it itself), what it
-- was asked for (`params`, e.g. the keys of a re-run), and an index for the lease sweep that hands out again
-- the jobs whose worker went quiet.
ALTER TABLE jobs ADD COLUMN worker text;
ALTER TABLE jobs ADD COLUMN params jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX jobs_open_lease_idx ON jobs (lease_until) WHERE status IN ('QUEUED', 'IN_PROGRESS');
