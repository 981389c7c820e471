import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import type { ObjectDeletions } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/** The `object_deletions` queue (see migration 010). */
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

  async cancelUnder(prefix: string): Promise<void> {
    // Waits for a deletion in flight on those rows (the poller holds them locked): after this transaction
    // commits, no queued deletion can remove an object written under the prefix.
    await this.db.query(`DELETE FROM object_deletions WHERE starts_with(key, $1)`, [prefix]);
  }
}

/**
 * One pass of the deletion queue: rows are locked while their objects are removed, and deleted with them. A
 * failed removal stays queued (attempts counted) for the next pass.
 */
export function drainObjectDeletions(pool: Pool, remove: (key: string) => Promise<void>, limit = 100): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ key: string }>(
      `SELECT key FROM object_deletions WHERE not_before <= now() ORDER BY not_before LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    const done: string[] = [];
    const failed: string[] = [];
    for (const { key } of rows) {
      try {
        await remove(key);
        done.push(key);
      } catch {
        failed.push(key);
      }
    }
    await client.query(`DELETE FROM object_deletions WHERE key = ANY($1)`, [done]);
    await client.query(`UPDATE object_deletions SET attempts = attempts + 1 WHERE key = ANY($1)`, [failed]);
    return done.length;
  });
}
