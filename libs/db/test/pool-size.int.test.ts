import { Client } from 'pg';
import { z } from 'zod';
import { dbEnv, loadConfig } from '@dam/config';
import { createDatabase, serviceIdentities, startServiceProcess, waitFor } from '@dam/testing';
import { createPool } from '../src';

// DB_POOL_MAX (issue 31, review D10): each process opens at most that many connections, so the replicas of the
// services that own a database fit the server's max_connections.

const LOCK = 31_010;

describe('DB_POOL_MAX', () => {
  it('caps the connections of a pool built from a service config at DB_POOL_MAX under 10 concurrent queries', async () => {
    const url = await createDatabase('poolmax');
    const config = loadConfig(z.object(dbEnv), { DATABASE_URL: url, DB_POOL_MAX: '3' });
    const pool = createPool(config);
    // Every query waits on a lock this client holds, so each one holds its connection until the lock is let go.
    const holder = new Client({ connectionString: url });
    await holder.connect();
    let queries: Promise<unknown>[] = [];
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [LOCK]);
      queries = Array.from({ length: 10 }, () => pool.query('SELECT pg_advisory_lock_shared($1), pg_advisory_unlock_shared($1)', [LOCK]));
      const backends = async (): Promise<{ connections: number; waiting: number }> =>
        (
          await holder.query<{ connections: number; waiting: number }>(
            `SELECT count(*)::int AS connections, (count(*) FILTER (WHERE wait_event_type = 'Lock'))::int AS waiting
               FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
          )
        ).rows[0]!;
      // Settled: 3 connections wait on the lock and the pool queued the other 7, or it opened more than 3.
      await waitFor(
        async () => {
          const now = await backends();
          return (now.waiting === 3 && pool.waitingCount === 7) || now.connections > 3;
        },
        { description: '10 queries handed out' },
      );
      expect(await backends()).toEqual({ connections: 3, waiting: 3 });
      expect({ total: pool.totalCount, waiting: pool.waitingCount }).toEqual({ total: 3, waiting: 7 });
      await holder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
      expect(await Promise.all(queries)).toHaveLength(10);
      expect(pool.totalCount).toBeLessThanOrEqual(3);
    } finally {
      await holder.end();
      await Promise.allSettled(queries);
      await pool.end();
    }
  });

  it('keeps 10 when unset, and a service refuses to start with a value outside 1-100, naming it', async () => {
    expect(loadConfig(z.object(dbEnv), { DATABASE_URL: 'postgres://db/dam' }).DB_POOL_MAX).toBe(10);
    const service = await startServiceProcess(
      'search',
      { ...serviceIdentities().env('search'), DATABASE_URL: await createDatabase('poolbad'), DB_POOL_MAX: '0', NATS_URL: 'nats://127.0.0.1:1' },
      { waitReady: false },
    );
    expect(await service.exited).toMatchObject({ code: 1 });
    expect(service.logs()).toContain('  - DB_POOL_MAX: must be a whole number from 1 to 100 (connections of this process to PostgreSQL)');
  });
});
