-- Chains whose head was lost before every writer locked its chains (see lockChains in delivery.repository.ts): an
-- event recorded while an earlier one of its asset was sent and ended could be left pending without the head mark,
-- and so never sent. Each pending delivery is marked again from the chain as it stands.
UPDATE deliveries d SET head = NOT EXISTS (
  SELECT 1 FROM deliveries e WHERE e.status = 'pending' AND e.url = d.url AND e.asset_id = d.asset_id AND e.seq < d.seq
)
WHERE d.status = 'pending'
  AND d.head IS DISTINCT FROM NOT EXISTS (
    SELECT 1 FROM deliveries e WHERE e.status = 'pending' AND e.url = d.url AND e.asset_id = d.asset_id AND e.seq < d.seq
  );
