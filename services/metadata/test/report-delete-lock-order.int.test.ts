import { createHash, randomUUID } from 'node:crypto';
import type { Pool } from '@dam/db';
import { waitFor } from '@dam/testing';
import type { RunInTransaction, Tx } from '../src/domain/ports';
import { createLogger } from '@dam/logging';
import { applyJobReport } from '../src/use-cases/apply-job-report.use-case';
import { sweepJobLeases } from '../src/use-cases/sweep-job-leases.use-case';
import { deleteAsset } from '../src/use-cases/trash.use-case';
import { finalReport, principal, startMetadata, type Harness, registerAsset } from './harness';

// Issue 35: a Delete locked the asset's row and then its jobs' rows, a job's final report its job's row and then the
// asset's; run together on one asset they deadlocked (PostgreSQL 40P01, the Delete answered 500). Both now take
// the asset's row first.
let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const GROUP = 35;
const admin = principal({ group_id: GROUP, user_id: 7 });
const checksum = createHash('md5').update('png').digest('hex');

const create = (): Promise<string> => registerAsset(h, admin);

/** Transactions of this test's database waiting for a row lock another one holds. */
const lockWaiters = async (pool: Pool): Promise<number> =>
  Number(
    (await pool.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rows[0]?.n,
  );

/**
 * Each side stops after its first row lock until the other side holds its own first lock too, or waits for one (then
 * the two cannot both hold one: they take the same row first). The interleaving that deadlocked is forced, not hoped for.
 */
function barrier(pool: Pool): (side: string) => Promise<void> {
  const arrived = new Set<string>();
  return async (side) => {
    arrived.add(side);
    await waitFor(async () => arrived.size === 2 || (await lockWaiters(pool)) > 0, { intervalMs: 20, description: `${side}: the other side's first lock` });
  };
}

/** The service's transactions, each stopping at the barrier after its first row lock (an asset's or a job's). */
function stoppingAfterFirstLock(transactions: RunInTransaction, side: string, wait: (side: string) => Promise<void>): RunInTransaction {
  return (fn) =>
    transactions((tx) => {
      let first = true;
      const afterLock = async <T>(locked: Promise<T>): Promise<T> => {
        const value = await locked;
        if (first) {
          first = false;
          await wait(side);
        }
        return value;
      };
      const assets = Object.create(tx.assets) as Tx['assets'];
      assets.findForUpdate = (groupId, id) => afterLock(tx.assets.findForUpdate(groupId, id));
      const jobs = Object.create(tx.jobs) as Tx['jobs'];
      jobs.findForUpdate = (groupId, jobId) => afterLock(tx.jobs.findForUpdate(groupId, jobId));
      jobs.claimExpired = (limit) => afterLock(tx.jobs.claimExpired(limit));
      return fn({ ...tx, assets, jobs });
    });
}

describe('Delete and a final report of the same asset at once (issue 35)', () => {
  it('both commit: neither is aborted as a deadlock, whichever takes the asset first', async () => {
    const id = await create();
    const report = await finalReport(h, {
      id: randomUUID(),
      asset_id: id,
      group_id: String(GROUP),
      source_checksum: checksum,
      image: { width: 4, height: 3 },
      conversions: { thumb: { object_key: `conversions/${GROUP}/${id}/${checksum}/thumb.webp`, content_type: 'image/webp', width: 4, height: 3, size: 10 } },
      errors: {},
    });
    const wait = barrier(h.pool);
    const [deleted, reported] = await Promise.allSettled([
      deleteAsset(stoppingAfterFirstLock(h.transactions, 'delete', wait), admin, id, ['original']),
      applyJobReport(stoppingAfterFirstLock(h.transactions, 'report', wait), report, 'conversion'),
    ]);
    // Before: one of them failed with 40P01 (deadlock detected) after PostgreSQL's deadlock_timeout.
    expect(deleted).toEqual({ status: 'fulfilled', value: { id, keys: ['original'], status: 'OK' } });
    expect(reported.status).toBe('fulfilled');
    const { rows } = await h.pool.query<{ deleted: boolean; status: string }>(
      `SELECT a.deleted_at IS NOT NULL AS deleted, j.status FROM assets a JOIN jobs j ON a.id = ANY(j.asset_ids) WHERE a.id = $1`,
      [id],
    );
    expect(rows).toEqual([{ deleted: true, status: expect.stringMatching(/^(COMPLETED|ERROR)$/) }]);
  });

  it("with the lease sweep handing the asset's job out again: the Delete commits, the sweep leaves the job to its next round", async () => {
    const id = await create();
    const { rows } = await h.pool.query<{ id: string }>(`UPDATE jobs SET lease_until = now() - interval '1 minute' WHERE $1 = ANY(asset_ids) RETURNING id`, [
      id,
    ]);
    expect(rows).toHaveLength(1);
    const logger = createLogger({ service: 'metadata-test', level: process.env.LOG_LEVEL ?? 'error' });
    const wait = barrier(h.pool);
    const [deleted, swept] = await Promise.allSettled([
      deleteAsset(stoppingAfterFirstLock(h.transactions, 'delete', wait), admin, id, ['original']),
      sweepJobLeases(stoppingAfterFirstLock(h.transactions, 'sweep', wait), h.timings, logger),
    ]);
    // Before: one of them failed with 40P01 (the sweep held the job and waited for the asset, the Delete the reverse).
    expect(deleted).toEqual({ status: 'fulfilled', value: { id, keys: ['original'], status: 'OK' } });
    expect(swept).toEqual({ status: 'fulfilled', value: { handedOut: 0, failed: 0, deferred: 1 } });
    const job = await h.pool.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [rows[0]?.id]);
    expect(job.rows).toEqual([{ status: 'ERROR' }]);
  });
});
