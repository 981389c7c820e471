import type { Principal } from '@dam/auth-tokens';
import type { Pool, PoolClient } from '@dam/db';
import type { DataUpdateQueue, QueuedDataUpdate } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/** `data_updates` (migration 012). */
export class DataUpdateRepository implements DataUpdateQueue {
  constructor(private readonly db: Queryable) {}

  async enqueue(groupId: number, assetId: string, principal: Principal, body: unknown): Promise<number> {
    const { rows } = await this.db.query<{ id: string }>(
      'INSERT INTO data_updates (group_id, asset_id, principal, body) VALUES ($1, $2, $3, $4) RETURNING id',
      [groupId, assetId, JSON.stringify(principal), JSON.stringify(body)],
    );
    return Number(rows[0]?.id);
  }

  async pending(groupId: number, assetId: string): Promise<boolean> {
    const { rows } = await this.db.query('SELECT 1 FROM data_updates WHERE group_id = $1 AND asset_id = $2 LIMIT 1', [groupId, assetId]);
    return rows.length > 0;
  }

  /** Whether any update waits (one cheap read, outside any transaction: what the poller asks first). */
  async anyQueued(): Promise<boolean> {
    const { rows } = await this.db.query('SELECT 1 FROM data_updates LIMIT 1');
    return rows.length > 0;
  }

  async claimNext(): Promise<QueuedDataUpdate | undefined> {
    // The head of some asset's queue (nothing older for that asset), skipping heads another applier holds.
    const { rows } = await this.db.query<{ id: string; group_id: number; asset_id: string; principal: Principal; body: unknown }>(
      `SELECT d.id, d.group_id, d.asset_id, d.principal, d.body FROM data_updates d
       WHERE NOT EXISTS (SELECT 1 FROM data_updates e WHERE e.group_id = d.group_id AND e.asset_id = d.asset_id AND e.id < d.id)
       ORDER BY d.id LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    const r = rows[0];
    return r ? { id: Number(r.id), groupId: r.group_id, assetId: r.asset_id, principal: r.principal, body: r.body } : undefined;
  }

  async remove(id: number): Promise<void> {
    await this.db.query('DELETE FROM data_updates WHERE id = $1', [id]);
  }
}
