import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import { statusAfter, type AttemptResult, type DeliveryView, type DueDelivery, type LoggedEvent } from '../domain/delivery';
import type { ClaimLimits, DeliveryStore } from '../domain/ports';

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_type: string;
  asset_id: string;
  url: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_status: number | null;
  last_error: string | null;
  reissue_job_id: number | null;
  created_at: Date;
  finished_at: Date | null;
  history: Array<{ attempt: number; at: string; status: number | null; error: string | null; duration_ms: number }>;
}

/** The parameters of `CLAIM_DUE_SQL`, in order. */
export const claimDueParams = (c: ClaimLimits): unknown[] => [
  c.limit,
  c.perUrl,
  [...c.runningByUrl.keys()],
  [...c.runningByUrl.values()],
  c.leaseMs / 1000,
  c.floor ?? null,
  c.perGroup,
  [...c.runningByGroup.keys()],
  [...c.runningByGroup.values()],
];

/**
 * The dispatcher's claim (parameters: `claimDueParams`). Heads only, through their indexes. Fair per group
 * (security review F9): a group holds at most `perGroup` slots, however many URLs it names, and the free slots go
 * round-robin: each group's earliest due delivery before any group's next, fewest slots held first. `groups` skips
 * along the group index (one probe per group with pending heads), then each group's due heads are read by their
 * own index, so one group's backlog neither crowds the others out of the candidates nor is read whole.
 *
 * The NOT EXISTS stays as a guard, cheap on so few rows, against a chain with two heads (every writer of a chain
 * now locks it first, see `lockChains`, so none should arise). `picked` tests status and lease again on the row it
 * locks: a claim or an end committed after `candidates` read its snapshot is seen there.
 */
export const CLAIM_DUE_SQL = `WITH RECURSIVE url_running AS (
     SELECT * FROM unnest($3::text[], $4::int[]) AS r(url, n)
   ), group_running AS (
     SELECT * FROM unnest($8::int[], $9::int[]) AS r(group_id, n)
   ), groups AS (
     (SELECT group_id FROM deliveries WHERE status = 'pending' AND head ORDER BY group_id LIMIT 1)
     UNION ALL
     SELECT (SELECT d.group_id FROM deliveries d WHERE d.status = 'pending' AND d.head AND d.group_id > g.group_id ORDER BY d.group_id LIMIT 1)
     FROM groups g WHERE g.group_id IS NOT NULL
   ), candidates AS (
     SELECT c.*, coalesce(gr.n, 0) AS group_held
     FROM groups g
     LEFT JOIN group_running gr ON gr.group_id = g.group_id
     CROSS JOIN LATERAL (
       SELECT d.id, d.group_id, d.url, d.next_attempt_at
       FROM deliveries d
       WHERE d.group_id = g.group_id AND d.status = 'pending' AND d.head AND d.next_attempt_at <= now()
         AND (d.lease_until IS NULL OR d.lease_until < now())
         AND d.url NOT IN (SELECT url FROM url_running WHERE n >= $2)
         AND ($6::bigint IS NULL OR d.seq <= $6 OR d.reissue_job_id IS NOT NULL)
         AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.status = 'pending' AND e.url = d.url AND e.asset_id = d.asset_id AND e.seq < d.seq)
       ORDER BY d.next_attempt_at, d.id
       LIMIT $7 * 4
     ) c
     WHERE g.group_id IS NOT NULL AND coalesce(gr.n, 0) < $7
   ), url_ranked AS (
     SELECT c.*, coalesce(ur.n, 0) + row_number() OVER (PARTITION BY c.url ORDER BY c.next_attempt_at, c.id) AS url_slot
     FROM candidates c LEFT JOIN url_running ur ON ur.url = c.url
   ), group_ranked AS (
     SELECT u.*, u.group_held + row_number() OVER (PARTITION BY u.group_id ORDER BY u.next_attempt_at, u.id) AS group_slot
     FROM url_ranked u WHERE u.url_slot <= $2
   ), picked AS (
     SELECT id FROM deliveries
     WHERE id IN (SELECT id FROM group_ranked WHERE group_slot <= $7 ORDER BY group_slot, next_attempt_at, id LIMIT $1)
       AND status = 'pending' AND (lease_until IS NULL OR lease_until < now())
     FOR UPDATE SKIP LOCKED
   )
   UPDATE deliveries d SET lease_until = now() + make_interval(secs => $5)
   FROM picked, events ev
   WHERE d.id = picked.id AND ev.id = d.event_id
   RETURNING d.id, d.asset_id, d.webhook_id, d.group_id, d.event_type, d.url, d.attempts, ev.body`;

/** `events`, `asset_creators`, `deliveries` and `delivery_attempts`. */
export class DeliveryRepository implements DeliveryStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Keeps the event and opens one delivery per URL, in one transaction; a redelivered event changes nothing
   * (`webhook_id` is the event id, unique per URL).
   */
  async recordEvent(e: LoggedEvent, urls: readonly string[]): Promise<number> {
    return withTransaction(this.pool, async (client) => {
      if (e.creatorId !== undefined) {
        await client.query(
          'INSERT INTO asset_creators (asset_id, creator_id) VALUES ($1, $2) ON CONFLICT (asset_id) DO UPDATE SET creator_id = EXCLUDED.creator_id',
          [e.assetId, e.creatorId],
        );
      }
      await client.query(
        `INSERT INTO events (id, group_id, asset_id, type, time, seq, creator_id, body)
         VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, (SELECT creator_id FROM asset_creators WHERE asset_id = $3)), $8) ON CONFLICT (id) DO NOTHING`,
        [e.id, e.groupId, e.assetId, e.type, e.time, e.seq, e.creatorId ?? null, e.body],
      );
      if (urls.length === 0) return 0;
      const chains = { urls, assetIds: urls.map(() => e.assetId) };
      await lockChains(client, chains);
      const r = await client.query(
        `INSERT INTO deliveries (webhook_id, group_id, event_id, event_type, asset_id, url, seq)
         SELECT $1, $2, $1, $3, $4, url, $5 FROM unnest($6::text[]) AS u(url) ON CONFLICT (webhook_id, url) DO NOTHING`,
        [e.id, e.groupId, e.type, e.assetId, e.seq, urls],
      );
      if ((r.rowCount ?? 0) > 0) await markHeads(client, chains);
      return r.rowCount ?? 0;
    });
  }

  /**
   * Takes due deliveries for an attempt (a lease of `leaseMs`): within the free slots, at most `perUrl` per URL and
   * `perGroup` per group counting those in flight, taken round-robin across groups, and for each asset and URL only
   * the earliest pending one (an asset's events reach a URL in order). `floor`, when given, is the stream sequence
   * up to which every event has been recorded: a newer event waits for it, since an earlier event of its asset may
   * still be on its way in (reissues, made of recorded events, never wait).
   */
  async claimDue(limits: ClaimLimits): Promise<DueDelivery[]> {
    const { rows } = await this.pool.query<{
      id: string;
      asset_id: string;
      webhook_id: string;
      group_id: number;
      event_type: string;
      url: string;
      attempts: number;
      body: string;
    }>(CLAIM_DUE_SQL, claimDueParams(limits));
    return rows.map((r) => ({
      id: Number(r.id),
      assetId: r.asset_id,
      webhookId: r.webhook_id,
      groupId: r.group_id,
      eventType: r.event_type,
      url: r.url,
      attempts: r.attempts,
      body: r.body,
    }));
  }

  /** Records one attempt and what follows: delivered, a retry at its time, or failed for good. */
  async finishAttempt(d: DueDelivery, result: AttemptResult): Promise<void> {
    const attempt = d.attempts + 1;
    const status = statusAfter(result);
    await withTransaction(this.pool, async (client) => {
      // A delivery that ends hands the head of its chain on; a retry keeps it.
      const chain = { urls: [d.url], assetIds: [d.assetId] };
      if (status !== 'pending') await lockChains(client, chain);
      await client.query(
        `INSERT INTO delivery_attempts (delivery_id, attempt, at, status, error, duration_ms) VALUES ($1, $2, now() - make_interval(secs => $3), $4, $5, $6)
         ON CONFLICT DO NOTHING`,
        [d.id, attempt, result.durationMs / 1000, result.status ?? null, result.error ?? null, result.durationMs],
      );
      await client.query(
        `UPDATE deliveries SET attempts = $2, status = $3, last_status = $4, last_error = $5, lease_until = NULL,
           next_attempt_at = CASE WHEN $3 = 'pending' THEN now() + make_interval(secs => $6) ELSE next_attempt_at END,
           finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END,
           head = head AND $3 = 'pending'
         WHERE id = $1`,
        [d.id, attempt, status, result.status ?? null, result.error ?? null, (result.retryInMs ?? 0) / 1000],
      );
      if (status !== 'pending') await markHeads(client, chain);
    });
  }

  /** Gives a taken delivery back untried (this process is stopping, or its URL is full). */
  async release(ids: readonly number[]): Promise<void> {
    // Rows locked in id order, as every other writer of a chain locks them (no deadlock with a chain's change).
    if (ids.length > 0) {
      await this.pool.query('UPDATE deliveries SET lease_until = NULL WHERE id IN (SELECT id FROM deliveries WHERE id = ANY($1) ORDER BY id FOR UPDATE)', [
        ids,
      ]);
    }
  }

  /**
   * A reissue: one new delivery (a new webhook id, `reissue-<job>-<event>`) per URL for each event of the group in
   * the range whose asset `userId` created. Returns how many.
   */
  async reissue(input: { groupId: number; userId: number; from: string; to: string; jobId: number; urls: readonly string[] }): Promise<number> {
    if (input.urls.length === 0) return 0;
    // The events of the range (parameters $1-$5), each with every URL.
    const selected = `FROM events ev CROSS JOIN unnest($5::text[]) AS u(url)
       WHERE ev.group_id = $1 AND ev.time >= $3 AND ev.time < $4
         AND coalesce(ev.creator_id, (SELECT creator_id FROM asset_creators c WHERE c.asset_id = ev.asset_id)) = $2`;
    const params = [input.groupId, input.userId, input.from, input.to, input.urls];
    return withTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ url: string; asset_id: string }>(`SELECT DISTINCT u.url, ev.asset_id ${selected}`, params);
      const chains = { urls: rows.map((c) => c.url), assetIds: rows.map((c) => c.asset_id) };
      await lockChains(client, chains);
      const r = await client.query(
        `INSERT INTO deliveries (webhook_id, group_id, event_id, event_type, asset_id, url, seq, reissue_job_id)
         SELECT 'reissue-' || $6::int || '-' || ev.id, ev.group_id, ev.id, ev.type, ev.asset_id, u.url, ev.seq, $6::int
         ${selected}
         ORDER BY ev.seq
         ON CONFLICT (webhook_id, url) DO NOTHING`,
        [...params, input.jobId],
      );
      if ((r.rowCount ?? 0) > 0) await markHeads(client, chains);
      return r.rowCount ?? 0;
    });
  }

  async log(groupId: number, status: string | undefined, offset: number, limit: number): Promise<{ items: DeliveryView[]; total: number }> {
    const where = 'group_id = $1 AND ($2::text IS NULL OR status = $2)';
    const [page, count] = await Promise.all([
      this.pool.query<DeliveryRow>(
        `SELECT d.id, d.webhook_id, d.event_type, d.asset_id, d.url, d.status, d.attempts, d.next_attempt_at, d.last_status, d.last_error,
           d.reissue_job_id, d.created_at, d.finished_at,
           coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'at', a.at, 'status', a.status, 'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.attempt)
                     FROM delivery_attempts a WHERE a.delivery_id = d.id), '[]') AS history
         FROM deliveries d WHERE ${where} ORDER BY d.id DESC OFFSET $3 LIMIT $4`,
        [groupId, status ?? null, offset, limit],
      ),
      this.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE ${where}`, [groupId, status ?? null]),
    ]);
    return { items: page.rows.map(toView), total: count.rows[0]?.n ?? 0 };
  }

  /** Events older than `days` can no longer be reissued (ASSET_EVENTS keeps 30 days); their deliveries stay logged. */
  async pruneEvents(days: number): Promise<number> {
    const r = await this.pool.query(
      `DELETE FROM events WHERE time < now() - make_interval(days => $1) AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status = 'pending')`,
      [days],
    );
    return r.rowCount ?? 0;
  }
}

/** Chains of deliveries: the i-th URL with the i-th asset. */
interface Chains {
  urls: readonly string[];
  assetIds: readonly string[];
}

/**
 * The class of the chains' advisory locks (two-key form, so apart from the migrations' one-key lock); the second key
 * is a hash of the chain, and two chains sharing one only wait for each other.
 */
const CHAIN_LOCK_CLASS = 0x7768_6b63;

/**
 * Locks `chains` for the rest of the transaction, as every writer of a chain does before it reads or changes one: a
 * concurrent change to one of them (an ending head, a new event) waits for this transaction, and its `markHeads`
 * then sees this one's rows.
 *
 * Each chain by an advisory lock, in key order (two writers of several chains cannot deadlock): locking its pending
 * deliveries alone locks nothing when it has none, and then two writers decide its head each without the other's
 * row. An event recorded while an earlier one of its asset is recorded, sent and ended saw that one pending and did
 * not mark itself head, while the end, not seeing the new row, handed the head to nobody: the later delivery (the
 * last of its asset, so no later event marks it either) stayed pending and was never sent. Its pending deliveries
 * are locked too, in id order, so that a claim skips a chain while it changes; after the advisory lock, as this
 * statement takes a new snapshot, they include those of the previous writer.
 */
async function lockChains(client: PoolClient, chains: Chains): Promise<void> {
  if (chains.urls.length === 0) return;
  // Evaluated after the sort (a volatile output expression not named in ORDER BY): the locks go in key order.
  await client.query(
    `SELECT pg_advisory_xact_lock(${CHAIN_LOCK_CLASS}, k)
     FROM (SELECT DISTINCT hashtext(c.url || chr(10) || c.asset_id) AS k FROM unnest($1::text[], $2::text[]) AS c(url, asset_id)) chains
     ORDER BY k`,
    [chains.urls, chains.assetIds],
  );
  await client.query(
    `SELECT d.id FROM deliveries d JOIN unnest($1::text[], $2::text[]) AS c(url, asset_id) ON d.url = c.url AND d.asset_id = c.asset_id
     WHERE d.status = 'pending' ORDER BY d.id FOR UPDATE OF d`,
    [chains.urls, chains.assetIds],
  );
}

/** Marks the head of each of `chains` (its pending deliveries with the lowest seq) and unmarks the rest. */
async function markHeads(client: PoolClient, chains: Chains): Promise<void> {
  if (chains.urls.length === 0) return;
  await client.query(
    `UPDATE deliveries d SET head = (d.seq = m.first)
     FROM (SELECT e.url, e.asset_id, min(e.seq) AS first
           FROM deliveries e JOIN unnest($1::text[], $2::text[]) AS c(url, asset_id) ON e.url = c.url AND e.asset_id = c.asset_id
           WHERE e.status = 'pending' GROUP BY e.url, e.asset_id) m
     WHERE d.status = 'pending' AND d.url = m.url AND d.asset_id = m.asset_id AND d.head <> (d.seq = m.first)`,
    [chains.urls, chains.assetIds],
  );
}

const toView = (r: DeliveryRow): DeliveryView => ({
  id: Number(r.id),
  webhook_id: r.webhook_id,
  event: r.event_type,
  asset_id: r.asset_id,
  url: r.url,
  status: r.status,
  attempt_count: r.attempts,
  response_code: r.last_status,
  error: r.last_error,
  next_retry_at: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
  reissue_job_id: r.reissue_job_id,
  created_at: r.created_at.toISOString(),
  finished_at: r.finished_at ? r.finished_at.toISOString() : null,
  attempts: r.history.map((a) => ({
    attempt: a.attempt,
    at: new Date(a.at).toISOString(),
    response_code: a.status,
    error: a.error,
    duration_ms: a.duration_ms,
  })),
});
