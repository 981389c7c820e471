-- Only the head of each asset's pending deliveries to one URL (the lowest `seq`) may go out: an asset's events
-- reach a URL in order. `head` marks it, kept by the repository in the same transaction as every change to a
-- chain, so the dispatcher reads the due heads through their own index instead of testing every pending delivery
-- for an earlier one (a receiver down for hours leaves a chain behind each of its assets' heads).
ALTER TABLE deliveries ADD COLUMN head boolean NOT NULL DEFAULT false;
UPDATE deliveries d SET head = true
WHERE d.status = 'pending'
  AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.status = 'pending' AND e.url = d.url AND e.asset_id = d.asset_id AND e.seq < d.seq);
CREATE INDEX deliveries_head_due_idx ON deliveries (next_attempt_at, id) WHERE status = 'pending' AND head;
DROP INDEX deliveries_due_idx;
