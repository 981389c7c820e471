import type { Logger } from '@dam/logging';
import { changesNoAsset, describeErrors, type JobTimings } from '../domain/job';
import type { RunInTransaction, Tx } from '../domain/ports';
import { settleAsset } from '../domain/processing';

export interface SweepResult {
  handedOut: number;
  failed: number;
  /** Jobs left for the next sweep: one of their assets was locked (a Delete, a report, a Replace... under way). */
  deferred: number;
}

/**
 * Jobs whose worker went quiet (crashed, killed, partitioned away) are handed out again with a new command;
 * after `maxAttempts` hand-outs they end in ERROR and so do their assets. No job stays open for ever.
 */
export async function sweepJobLeases(runInTransaction: RunInTransaction, timings: JobTimings, logger: Logger, limit = 100): Promise<SweepResult> {
  return runInTransaction(async (tx) => {
    const result: SweepResult = { handedOut: 0, failed: 0, deferred: 0 };
    for (const job of await tx.jobs.claimExpired(limit)) {
      const log = { job_id: job.id, group_id: job.groupId, worker: job.worker, attempts: job.attempts };
      // Everywhere else an asset's row is locked before its jobs' (issue 35: a Delete waiting for this job's row
      // while holding its asset's deadlocked with a sweep waiting for the asset). The sweep holds the job already, so
      // it takes the assets without waiting; one that is locked leaves the job to the next sweep.
      const locking = job.type === 'addon' || !changesNoAsset(job) ? job.assetIds : job.assetIds.slice(0, 1);
      if (!(await lockedWithoutWaiting(tx, job.groupId, locking))) {
        logger.debug(log, 'job lease ran out: its asset is busy, left to the next sweep');
        result.deferred++;
        continue;
      }
      if (job.attempts + 1 >= timings.maxAttempts) {
        // An addon job's failure is its addon's (an automatic addon's asset ends ERROR with it; one run on request leaves it).
        const key = job.type === 'addon' ? (job.params.keys?.[0] ?? 'addon') : 'original';
        const errors = { [key]: `no ${job.worker ?? ''} worker finished the job after ${job.attempts + 1} attempts` };
        await tx.jobs.finish(job.groupId, job.id, { status: 'ERROR', error: describeErrors(errors) });
        if (job.type === 'addon' || !changesNoAsset(job)) for (const assetId of job.assetIds) await settleAsset(tx, job.groupId, assetId, errors);
        logger.error(log, 'job given up: its lease ran out too often');
        result.failed++;
        continue;
      }
      const attempt = await tx.jobs.handOutAgain(job.groupId, job.id);
      // A CDN job is one command whatever the number of its assets (it names them all); a reissue names none.
      if (changesNoAsset(job) && job.assetIds.length === 0) await tx.commands.send(job, undefined, attempt);
      for (const assetId of changesNoAsset(job) ? job.assetIds.slice(0, 1) : job.assetIds) {
        const asset = await tx.assets.findForUpdate(job.groupId, assetId);
        if (asset) await tx.commands.send(job, asset, attempt);
      }
      logger.warn({ ...log, attempt }, 'job lease ran out: handed out again');
      result.handedOut++;
    }
    return result;
  });
}

/** Every one of the assets locked, none waited for: false as soon as one is locked by another transaction. */
async function lockedWithoutWaiting(tx: Tx, groupId: number, assetIds: readonly string[]): Promise<boolean> {
  for (const id of assetIds) if ((await tx.assets.findForUpdateNoWait(groupId, id)) === 'busy') return false;
  return true;
}
