import { hostname } from 'node:os';
import { withTransaction, type Pool } from '@dam/db';
import { usageOf } from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import { startPoller, type Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { DataUpdateRepository } from '../adapters/data-update.repository';
import { DEFAULT_DELETION_RETRY, drainObjectDeletions, type DeletionRetry } from '../adapters/object-deletion.repository';
import type { DeletedRecordExports } from '../domain/bulk-delete-export';
import type { RunInTransaction } from '../domain/ports';
import { runNextLocalJob } from '../use-cases/run-local-jobs.use-case';
import { applyNextQueuedUpdate } from '../use-cases/update-data.use-case';

/**
 * Removes the objects queued for deletion; a key ending in `/` removes everything under it. The deletion callbacks
 * waiting for them go out as they settle (`retry`: when a failing removal is reported ERROR).
 */
export function objectDeletionsPoller(
  pool: Pool,
  storage: Pick<Storage, 'remove' | 'removePrefix'>,
  logger: Logger,
  intervalMs: number,
  retry: DeletionRetry = DEFAULT_DELETION_RETRY,
): Worker {
  const remove = async (key: string): Promise<void> => {
    if (key.endsWith('/')) await storage.removePrefix(key);
    else await storage.remove(key);
  };
  const run = async () => {
    // Drain while there is a full batch: a purge of thousands of assets need not wait one interval per 100.
    while ((await drainObjectDeletions(pool, remove, 100, retry)) >= 100);
  };
  return { kind: 'poller', name: 'object-deletions', start: () => startPoller({ name: 'object-deletions', intervalMs, logger, run }) };
}

/**
 * Makes the public copies left pending (an older install's after migration 020, a failed or interrupted copy, a
 * remade conversion's), keeps the public prefix's bucket policy, and now and then sweeps the prefix against the
 * database (`publicPolicySync`). Revocations do not wait for it: they queue the copy's removal themselves.
 */
export function publicPolicyPoller(sync: () => Promise<unknown>, logger: Logger, intervalMs: number): Worker {
  return { kind: 'poller', name: 'public-policy', start: () => startPoller({ name: 'public-policy', intervalMs, logger, run: sync }) };
}

/**
 * Applies queued Update Data requests, oldest first per asset (several assets' queues drain side by side). A poll
 * with nothing queued is one read, not a transaction (five polls a second at the default interval).
 */
export function dataUpdatesPoller(transactions: RunInTransaction, queue: Pick<DataUpdateRepository, 'anyQueued'>, logger: Logger, intervalMs: number): Worker {
  const run = async () => {
    if (!(await queue.anyQueued())) return;
    while (await applyNextQueuedUpdate(transactions, logger));
  };
  return { kind: 'poller', name: 'data-updates', start: () => startPoller({ name: 'data-updates', intervalMs, logger, run }) };
}

/** Runs the jobs metadata does itself (bulk delete, purge), one at a time per replica; `exports` keeps bulk deletes' records. */
export function localJobsPoller(transactions: RunInTransaction, logger: Logger, intervalMs: number, exports?: DeletedRecordExports): Worker {
  const owner = `metadata@${hostname()}:${process.pid}`;
  const run = async () => {
    while (await runNextLocalJob(transactions, owner, logger, exports));
  };
  return { kind: 'poller', name: 'local-jobs', start: () => startPoller({ name: 'local-jobs', intervalMs, logger, run }) };
}

/**
 * Usage statistics (CONTRACT §9): the bytes stored per group and creator (originals and conversions, the trash
 * included until purged), one snapshot every interval, through the outbox as `storage_bytes` gauge records.
 */
export function storageGaugePoller(pool: Pool, logger: Logger, intervalMs: number): Worker {
  const run = async () => {
    const at = new Date().toISOString();
    await withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ group_id: number; creator_id: number; bytes: string }>(
        `SELECT group_id, creator_id,
           sum(size + coalesce((SELECT sum((c.value ->> 'size')::bigint) FROM jsonb_each(conversions) c), 0))::bigint AS bytes
         FROM assets WHERE creator_id > 0 GROUP BY group_id, creator_id`,
      );
      const usage = usageOf('storage_bytes');
      for (const r of rows) {
        const id = `storage_bytes-${r.group_id}-${r.creator_id}-${at}`;
        const record = {
          id,
          metric: 'storage_bytes' as const,
          group_id: String(r.group_id),
          user_id: r.creator_id,
          value: Number(r.bytes),
          start: at,
          end: at,
        };
        await writeOutbox(client, { id, subject: usage.subject, schema: usage.schema, payload: record });
      }
    });
  };
  return { kind: 'poller', name: 'storage-gauge', start: () => startPoller({ name: 'storage-gauge', intervalMs, logger, run }) };
}
