import { hostname } from 'node:os';
import type { Pool } from '@dam/db';
import { startPoller, type Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { drainObjectDeletions } from '../adapters/object-deletion.repository';
import type { RunInTransaction } from '../domain/ports';
import { runNextLocalJob } from '../domain/run-local-jobs.use-case';
import { applyNextQueuedUpdate } from '../domain/update-data.use-case';

/** Removes the objects queued for deletion; a key ending in `/` removes everything under it. */
export function objectDeletionsPoller(pool: Pool, storage: Storage, logger: Logger, intervalMs: number): Worker {
  const remove = async (key: string): Promise<void> => {
    if (key.endsWith('/')) await storage.removePrefix(key);
    else await storage.remove(key);
  };
  const run = async () => {
    // Drain while there is a full batch: a purge of thousands of assets need not wait one interval per 100.
    while ((await drainObjectDeletions(pool, remove)) >= 100);
  };
  return { kind: 'poller', name: 'object-deletions', start: () => startPoller({ name: 'object-deletions', intervalMs, logger, run }) };
}

/** Keeps the bucket policy equal to `public_objects` (revocations by delete, replace and purge land here). */
export function publicPolicyPoller(sync: () => Promise<unknown>, logger: Logger, intervalMs: number): Worker {
  return { kind: 'poller', name: 'public-policy', start: () => startPoller({ name: 'public-policy', intervalMs, logger, run: sync }) };
}

/** Applies queued Update Data requests, oldest first per asset (several assets' queues drain side by side). */
export function dataUpdatesPoller(transactions: RunInTransaction, logger: Logger, intervalMs: number): Worker {
  const run = async () => {
    while (await applyNextQueuedUpdate(transactions, logger));
  };
  return { kind: 'poller', name: 'data-updates', start: () => startPoller({ name: 'data-updates', intervalMs, logger, run }) };
}

/** Runs the jobs metadata does itself (bulk delete, purge), one at a time per replica. */
export function localJobsPoller(transactions: RunInTransaction, logger: Logger, intervalMs: number): Worker {
  const owner = `metadata@${hostname()}:${process.pid}`;
  const run = async () => {
    while (await runNextLocalJob(transactions, owner, logger));
  };
  return { kind: 'poller', name: 'local-jobs', start: () => startPoller({ name: 'local-jobs', intervalMs, logger, run }) };
}
