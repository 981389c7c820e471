import { createHash } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import type { Storage } from '@dam/storage';
import type { PublicObjects } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

export class PublicObjectRepository implements PublicObjects {
  constructor(private readonly db: Queryable) {}

  async add(groupId: number, assetId: string, entries: ReadonlyArray<{ key: string; objectKey: string }>): Promise<void> {
    for (const e of entries) {
      await this.db.query(
        `INSERT INTO public_objects (object_key, group_id, asset_id, key) VALUES ($1, $2, $3, $4)
         ON CONFLICT (object_key) DO UPDATE SET group_id = $2, asset_id = $3, key = $4`,
        [e.objectKey, groupId, assetId, e.key],
      );
    }
  }

  async revoke(groupId: number, assetId: string, keys?: readonly string[]): Promise<void> {
    await this.db.query(`DELETE FROM public_objects WHERE group_id = $1 AND asset_id = $2 AND ($3::text[] IS NULL OR key = ANY($3))`, [
      groupId,
      assetId,
      keys ?? null,
    ]);
  }
}

/** One writer of the bucket policy at a time (any constant works; this one is "public"). */
const POLICY_LOCK_KEY = 0x7075626c6963;

/**
 * Writes the bucket policy from `public_objects` when it differs from what was last written (by any replica: the
 * fingerprint is kept in the database). The table is the truth: a crash between a commit and the policy write
 * is repaired by the next run.
 */
export function publicPolicySync(pool: Pool, storage: Storage): () => Promise<boolean> {
  return () =>
    withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [POLICY_LOCK_KEY]);
      const { rows } = await client.query<{ object_key: string }>('SELECT object_key FROM public_objects ORDER BY object_key');
      const keys = rows.map((r) => r.object_key);
      const fingerprint = createHash('md5').update(keys.join('\n')).digest('hex');
      const state = await client.query<{ fingerprint: string }>('SELECT fingerprint FROM public_policy_state WHERE id = 1');
      if (state.rows[0]?.fingerprint === fingerprint) return false;
      await storage.setPublicObjects(keys);
      await client.query('INSERT INTO public_policy_state (id, fingerprint) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET fingerprint = $1', [fingerprint]);
      return true;
    });
}
