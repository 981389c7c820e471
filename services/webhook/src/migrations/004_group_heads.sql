-- The dispatcher takes due heads group by group (one tenant's backlog or slow receivers must not hold every
-- delivery slot, security review F9): each group's due heads in order, through this index, and the groups that
-- have pending heads by skipping along it.
CREATE INDEX deliveries_group_head_due_idx ON deliveries (group_id, next_attempt_at, id) WHERE status = 'pending' AND head;
