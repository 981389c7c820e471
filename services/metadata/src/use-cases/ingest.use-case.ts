import type { Principal } from '@dam/auth-tokens';
import type { IngestedFile, JobReport } from '@dam/events';
import { originalKey } from '@dam/storage';
import { startedBy, type Job } from '../domain/job';
import { isOwnOriginalKey } from '../domain/object-keys';
import type { RunInTransaction, Tx } from '../domain/ports';
import { NO_AUTO_ADDONS, settleAsset, startProcessing, type AutoAddonsOf } from '../domain/processing';

export const DOWNLOAD_STEP = 'download';

export interface IngestRequest {
  id: string;
  name: string;
  /** The https URL or s3:// URI. */
  source: string;
  /** Why upload already knows it can never succeed (refused scheme, address or bucket); the asset ends ERROR. */
  refused?: string;
}

export interface IngestAccepted {
  id: string;
  status: 'QUEUED' | 'ERROR';
  message: string;
}

/**
 * Ingest from URI (endpoint 3), metadata's part: the asset exists at once (`NOT_READY`, nothing stored yet) with
 * an `ingest` job whose command goes to upload, in one transaction. A request that can never succeed makes the
 * asset `ERROR` with `errors.original` right away, so its id still tells the client why.
 */
export async function startIngest(runInTransaction: RunInTransaction, caller: Principal, req: IngestRequest): Promise<IngestAccepted> {
  return runInTransaction(async (tx) => {
    const asset = await tx.assets.insert({
      id: req.id,
      groupId: caller.group_id,
      creatorId: caller.user_id,
      name: req.name,
      size: 0,
      checksum: '',
      contentType: 'application/octet-stream',
      status: 'NOT_READY',
      metadata: {},
      data: {},
      dataSchemaId: 0,
      objectKey: originalKey(String(caller.group_id), req.id),
    });
    if (req.refused) {
      await settleAsset(tx, asset.groupId, asset.id, { original: req.refused });
      return { id: asset.id, status: 'ERROR', message: req.refused };
    }
    const job = await tx.jobs.create({
      groupId: asset.groupId,
      type: 'ingest',
      worker: 'upload',
      params: { source: req.source, name: req.name },
      assetIds: [asset.id],
      steps: [DOWNLOAD_STEP],
      createdBy: caller.user_id,
    });
    await tx.commands.send(job, asset, 0);
    return { id: asset.id, status: 'QUEUED', message: `The download is queued as job ${job.id}; the asset follows the upload states` };
  });
}

/**
 * The end of an ingest job, inside the report's transaction: the stored original becomes the asset's
 * (`file-saved`, then its processing as after an upload), or the asset ends `ERROR` with why.
 */
export async function finishIngest(
  tx: Tx,
  job: Job,
  report: JobReport,
  autoAddonsOf?: AutoAddonsOf,
): Promise<'processed' | 'failed' | 'recorded' | 'foreign-object-key'> {
  const asset = await tx.assets.findForUpdate(job.groupId, report.asset_id);
  if (!asset) return 'recorded';
  const file: IngestedFile | undefined = report.ingested;
  if (report.state === 'FAILED' || !file) {
    const why = report.error ?? 'the download failed';
    await tx.jobs.finish(job.groupId, job.id, { status: 'ERROR', error: why, ...startedBy(report) });
    // Whatever a crashed attempt may have left at the original's key goes.
    await tx.deletions.enqueue([asset.objectKey]);
    return (await settleAsset(tx, job.groupId, asset.id, { original: why })) === 'failed' ? 'failed' : 'recorded';
  }
  if (!isOwnOriginalKey(job.groupId, asset.id, file.object_key)) return 'foreign-object-key';
  await tx.jobs.finish(job.groupId, job.id, { status: 'COMPLETED', ...startedBy(report) });
  const stored = await tx.assets.replaceOriginal(job.groupId, asset.id, {
    name: asset.name,
    size: file.size,
    checksum: file.checksum,
    contentType: file.content_type,
    objectKey: file.object_key,
    metadata: file.metadata,
    data: asset.data,
    dataSchemaId: asset.dataSchemaId,
  });
  await tx.events.write('file-saved', stored);
  // Its automatic addons open with its processing, as after an upload (asked inside the report's transaction: the
  // stored type is known only now; settings and model states are cached).
  const auto = autoAddonsOf ? await autoAddonsOf(job.groupId, stored.contentType) : NO_AUTO_ADDONS;
  const after = await startProcessing(tx, stored, job.createdBy ?? asset.creatorId, auto);
  return after.status === 'OK' ? 'processed' : 'recorded';
}
