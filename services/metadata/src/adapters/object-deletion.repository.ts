import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import type { DeletionPayload } from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import type { ObjectDeletions, RemovedObject } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/** A held `file-deleted`: the outbox entry its Delete wrote, the deletion payload in `payload.data`. */
export interface HeldDeletionEntry {
  id: string;
  subject: string;
  payload: { data: DeletionPayload } & Record<string, unknown>;
}

/**
 * How the queue retries a removal that failed: after `backoffMs`, doubling each time up to `maxBackoffMs`. After
 * `maxAttempts` failures the deletion callbacks waiting for it report ERROR; the row stays queued (at the longest
 * backoff), so the object still goes once the store lets it: the callback is not held for ever, nothing is orphaned.
 */
export interface DeletionRetry {
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
}

/** 10 attempts over about 34 minutes (2 s doubling), then hourly. */
export const DEFAULT_DELETION_RETRY: DeletionRetry = { maxAttempts: 10, backoffMs: 2_000, maxBackoffMs: 3_600_000 };

/** The `object_deletions` queue (see migration 010) and the deletion callbacks waiting for it (migration 018). */
export class ObjectDeletionRepository implements ObjectDeletions {
  constructor(private readonly db: Queryable) {}

  async enqueue(keys: readonly string[], delayMs = 0): Promise<void> {
    if (keys.length === 0) return;
    await this.db.query(
      `INSERT INTO object_deletions (key, not_before) SELECT unnest($1::text[]), now() + make_interval(secs => $2 / 1000.0)
       ON CONFLICT (key) DO NOTHING`,
      [keys, delayMs],
    );
  }

  async cancelUnder(prefix: string, reason = 'the key was in use again before they were removed'): Promise<void> {
    // Waits for a deletion in flight on those rows (the poller holds them locked): after this transaction
    // commits, no queued deletion can remove an object written under the prefix.
    await this.db.query(`DELETE FROM object_deletions WHERE starts_with(key, $1)`, [prefix]);
    // A callback waiting for them says so (MAYBE), before whatever event this transaction writes next.
    const { rows } = await this.db.query<{ asset_id: string }>(
      `UPDATE deletion_outcome_objects x SET state = 'cancelled', error = $2 FROM deletion_outcomes o
       WHERE x.outcome_id = o.id AND x.state = 'pending' AND starts_with(x.key, $1) RETURNING o.asset_id`,
      [prefix, reason],
    );
    if (rows.length > 0) await releaseDeletionOutcomes(this.db, [...new Set(rows.map((r) => r.asset_id))]);
  }

  async releaseHeld(assetId: string, reason: string): Promise<void> {
    await releaseDeletionOutcomes(this.db, [assetId], reason);
  }
}

/**
 * Holds `entry` (a `file-deleted`) until the removals of `objects` are settled, and behind any held before it for
 * the same asset. Returns false when nothing holds it: the caller writes it to the outbox now.
 */
export async function holdDeletionEvent(
  db: Queryable,
  groupId: number,
  assetId: string,
  entry: HeldDeletionEntry,
  objects: readonly RemovedObject[],
): Promise<boolean> {
  if (objects.length === 0) {
    const { rowCount } = await db.query(`SELECT 1 FROM deletion_outcomes WHERE asset_id = $1 LIMIT 1`, [assetId]);
    if (!rowCount) return false;
  }
  const { rows } = await db.query<{ id: string }>(`INSERT INTO deletion_outcomes (group_id, asset_id, entry) VALUES ($1, $2, $3) RETURNING id`, [
    groupId,
    assetId,
    JSON.stringify(entry),
  ]);
  const keys = objects.map((o) => o.key);
  await db.query(
    `INSERT INTO deletion_outcome_objects (outcome_id, key, label) SELECT $1, k, l FROM unnest($2::text[], $3::text[]) AS t(k, l)
     ON CONFLICT DO NOTHING`,
    [rows[0]?.id, keys, objects.map((o) => o.label)],
  );
  return true;
}

interface OutcomeObject {
  key: string;
  label: string;
  state: 'pending' | 'removed' | 'failed' | 'cancelled';
  error: string | null;
}

/** The deletion payload once its removals are settled (`forced`: the reason some were still pending). */
export function settledPayload(data: DeletionPayload, objects: readonly OutcomeObject[], forced?: string): DeletionPayload {
  const failed = objects.filter((o) => o.state === 'failed');
  const kept = objects.filter((o) => o.state === 'cancelled' || o.state === 'pending');
  const labels = (os: readonly OutcomeObject[]) => [...new Set(os.map((o) => o.label))].join(', ');
  if (failed.length > 0) {
    const errors: Record<string, string> = {};
    for (const o of failed) errors[o.label] = errors[o.label] ? `${errors[o.label]}; ${o.error ?? 'not removed'}` : (o.error ?? 'not removed');
    return { ...data, status: 'ERROR', message: `${data.message}; the stored files of ${labels(failed)} could not be removed`, errors };
  }
  if (kept.length > 0) {
    const why = [...new Set(kept.map((o) => (o.state === 'cancelled' ? o.error : forced) ?? 'they were kept'))].join('; ');
    return { ...data, status: 'MAYBE', message: `${data.message}; the stored files of ${labels(kept)} were kept: ${why}` };
  }
  return { ...data, status: 'OK' };
}

/**
 * A held event's object still waits while its row is queued. One pending without a row was removed: a Delete that
 * found the key queued already (ON CONFLICT DO NOTHING) while a drain was removing it is not marked by that drain,
 * which could not see its uncommitted claim.
 */
const STILL_QUEUED = `x.state = 'pending' AND EXISTS (SELECT 1 FROM object_deletions d WHERE d.key = x.key)`;

/**
 * Sends the held `file-deleted` events of these assets (any asset when absent) whose removals are settled, each
 * asset's in the order they were held, stopping at the first still waiting; `forced` sends them all (MAYBE with
 * that reason for what is pending), as an Undelete does before its `file-undeleted`.
 */
export async function releaseDeletionOutcomes(db: Queryable, assetIds?: readonly string[], forced?: string): Promise<number> {
  // Any asset: those with a held event that waits for no removal (during an outage thousands may wait that cannot go).
  const assets =
    assetIds ??
    (
      await db.query<{ asset_id: string }>(
        `SELECT DISTINCT o.asset_id FROM deletion_outcomes o
         WHERE NOT EXISTS (SELECT 1 FROM deletion_outcome_objects x WHERE x.outcome_id = o.id AND ${STILL_QUEUED}) LIMIT 500`,
      )
    ).rows.map((r) => r.asset_id);
  if (assets.length === 0) return 0;
  // Locked in id order and waited for (no SKIP LOCKED): skipping an asset's earlier held event could send a later one first.
  const { rows: held } = await db.query<{ id: string; asset_id: string; entry: HeldDeletionEntry }>(
    `SELECT id, asset_id, entry FROM deletion_outcomes WHERE asset_id = ANY($1) ORDER BY id FOR UPDATE`,
    [assets],
  );
  if (held.length === 0) return 0;
  const { rows: objects } = await db.query<OutcomeObject & { outcome_id: string }>(
    `SELECT outcome_id, key, label, CASE WHEN state = 'pending' AND NOT (${STILL_QUEUED}) THEN 'removed' ELSE state END AS state, error
     FROM deletion_outcome_objects x WHERE outcome_id = ANY($1::bigint[])`,
    [held.map((h) => h.id)],
  );
  const objectsOf = new Map<string, OutcomeObject[]>();
  for (const o of objects) {
    const list = objectsOf.get(o.outcome_id);
    if (list) list.push(o);
    else objectsOf.set(o.outcome_id, [o]);
  }
  const waiting = new Set<string>();
  const released: string[] = [];
  for (const h of held) {
    if (waiting.has(h.asset_id)) continue;
    const own = objectsOf.get(h.id) ?? [];
    if (forced === undefined && own.some((o) => o.state === 'pending')) {
      waiting.add(h.asset_id);
      continue;
    }
    const data = settledPayload(h.entry.payload.data, own, forced);
    await writeOutbox(db as Pick<PoolClient, 'query'>, {
      id: h.entry.id,
      subject: h.entry.subject,
      payload: { ...h.entry.payload, time: new Date().toISOString(), data },
    });
    released.push(h.id);
  }
  if (released.length > 0) await db.query(`DELETE FROM deletion_outcomes WHERE id = ANY($1::bigint[])`, [released]);
  return released.length;
}

/**
 * One pass of the deletion queue: rows are locked while their objects are removed, and deleted with them. A
 * failed removal stays queued, retried after a growing backoff; at its `maxAttempts`-th failure the callbacks
 * waiting for it are told (ERROR). Then every held callback whose removals are settled is sent.
 */
export async function drainObjectDeletions(
  pool: Pool,
  remove: (key: string) => Promise<void>,
  limit = 100,
  retry: DeletionRetry = DEFAULT_DELETION_RETRY,
): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ key: string; attempts: number }>(
      `SELECT key, attempts FROM object_deletions WHERE not_before <= now() ORDER BY not_before LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    const removed: string[] = [];
    const failed: Array<{ key: string; reason: string }> = [];
    for (const { key } of rows) {
      try {
        await remove(key);
        removed.push(key);
      } catch (error) {
        failed.push({ key, reason: reasonOf(error) });
      }
    }
    await client.query(`DELETE FROM object_deletions WHERE key = ANY($1)`, [removed]);
    await client.query(`UPDATE deletion_outcome_objects SET state = 'removed' WHERE state = 'pending' AND key = ANY($1)`, [removed]);
    if (failed.length > 0) {
      const { rows: given } = await client.query<{ key: string; attempts: number }>(
        `UPDATE object_deletions SET attempts = attempts + 1,
           not_before = now() + make_interval(secs => least($2::float8 * power(2, attempts), $3::float8) / 1000.0)
         WHERE key = ANY($1) RETURNING key, attempts`,
        [failed.map((f) => f.key), retry.backoffMs, retry.maxBackoffMs],
      );
      // Told once, at the failure that uses up the attempts (a later one finds no pending callback).
      const gaveUp = new Set(given.filter((g) => g.attempts >= retry.maxAttempts).map((g) => g.key));
      const reasons = failed.filter((f) => gaveUp.has(f.key));
      await client.query(
        `UPDATE deletion_outcome_objects x SET state = 'failed', error = t.reason
         FROM unnest($1::text[], $2::text[]) AS t(key, reason) WHERE x.key = t.key AND x.state = 'pending'`,
        [reasons.map((r) => r.key), reasons.map((r) => `not removed after ${retry.maxAttempts} attempts (still retried): ${r.reason}`)],
      );
    }
    // With the rows' outcome: a callback goes out in the transaction that settles its last removal.
    await releaseDeletionOutcomes(client);
    return removed.length;
  });
}

/** A removal's failure as a callback may show it: the store's error name and message, no stack. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 300);
  const code = (error as { code?: unknown }).code;
  return `${typeof code === 'string' ? `${code}: ` : ''}${error.message}`.slice(0, 300);
}
