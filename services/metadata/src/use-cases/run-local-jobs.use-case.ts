import type { Logger } from '@dam/logging';
import { originalKey, conversionsPrefix } from '@dam/storage';
import type { AssetData } from '@dam/events';
import { toAssetData } from '../domain/asset';
import { EXPORT_STEP, type DeletedRecordExports } from '../domain/bulk-delete-export';
import type { Job } from '../domain/job';
import type { RunInTransaction } from '../domain/ports';
import { trashOrTrim } from './trash.use-case';

/** Assets handled per transaction: a crash loses at most one batch of work, which the next run redoes. */
const BATCH = 50;

/**
 * Runs one job that metadata does itself (bulk delete, purge), if one is waiting; returns whether it ran one.
 * Each batch commits with the job's progress and a renewed lease, and every step is idempotent, so a job whose
 * runner died is taken up again (`claimLocal`) and finishes.
 */
export async function runNextLocalJob(runInTransaction: RunInTransaction, owner: string, logger: Logger, exports?: DeletedRecordExports): Promise<boolean> {
  const job = await runInTransaction((tx) => tx.jobs.claimLocal(owner));
  if (!job) return false;
  const log = { job_id: job.id, group_id: job.groupId, type: job.type, attempts: job.attempts };
  logger.info(log, 'job started');
  try {
    if (job.type === 'purge') await purge(runInTransaction, job);
    else if (job.type === 'bulk_delete')
      await bulkDelete(runInTransaction, job, job.steps.some((s) => s.name === EXPORT_STEP) ? (exports ?? noExports()) : undefined);
    else throw new Error(`metadata does not run ${job.type} jobs`);
    await runInTransaction((tx) => tx.jobs.finish(job.groupId, job.id, { status: 'COMPLETED' }));
    logger.info(log, 'job completed');
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await runInTransaction((tx) => tx.jobs.finish(job.groupId, job.id, { status: 'ERROR', error: message }));
    logger.error({ ...log, err: error }, 'job failed');
  }
  return true;
}

/** Every asset trashed before the purge was asked for goes for good: row, original, outputs. */
async function purge(runInTransaction: RunInTransaction, job: Job): Promise<void> {
  for (;;) {
    const purged = await runInTransaction(async (tx) => {
      const assets = await tx.assets.lockTrashed(job.groupId, job.createdAt, BATCH);
      for (const asset of assets) {
        await tx.deletions.enqueue([originalKey(String(asset.groupId), asset.id), asset.objectKey, conversionsPrefix(String(asset.groupId), asset.id)]);
        await tx.jobs.finishOpen(asset.groupId, asset.id, 'processing', { status: 'ERROR', error: 'the asset was purged' });
        await tx.publicObjects.revoke(asset.groupId, asset.id);
        // Its collections lose it (the rows go with the asset); search learns the asset is in none.
        await tx.collections.lockMemberships([asset.id]);
        const [memberships] = await tx.collections.membershipsOf([asset.id]);
        await tx.assets.remove(asset.groupId, asset.id);
        if (memberships && memberships.collectionIds.length > 0) await tx.events.writeMembership(asset.groupId, asset.id, [], memberships.version);
      }
      // Read models forget them (no public event: the specification raises events through Delete and Undelete only).
      if (assets.length > 0)
        await tx.events.writePurge(
          job.groupId,
          assets.map((a) => ({ id: a.id, version: a.version + 1 })),
        );
      await tx.jobs.advance(
        job.groupId,
        job.id,
        0,
        assets.map((a) => a.id),
      );
      return assets.length;
    });
    if (purged < BATCH) return;
  }
}

const noExports = (): never => {
  throw new Error('this replica keeps no bulk delete exports');
};

/**
 * The assets fixed at request time go to the trash, one `file-deleted` each; ones gone or trashed meanwhile are
 * skipped. With `exports`, each batch's records (as they were before the trash) are stored before its transaction
 * commits: a batch that committed has its part; one run again after a crash trashes and writes the same assets (a
 * batch found already trashed writes nothing, keeping the part its first run wrote).
 */
async function bulkDelete(runInTransaction: RunInTransaction, job: Job, exports?: DeletedRecordExports): Promise<void> {
  for (let i = 0; i < job.assetIds.length; i += BATCH) {
    const batch = job.assetIds.slice(i, i + BATCH);
    await runInTransaction(async (tx) => {
      const records: AssetData[] = [];
      for (const id of batch) {
        const asset = await tx.assets.findForUpdate(job.groupId, id);
        if (!asset || asset.deletedAt) continue;
        if (exports) records.push(toAssetData(asset));
        await trashOrTrim(tx, asset, ['original']);
      }
      if (exports && records.length > 0) await exports.writePart(job.groupId, job.id, i / BATCH, records);
      await tx.jobs.advance(job.groupId, job.id, (100 * (i + batch.length)) / job.assetIds.length);
    });
  }
}
