import type { JobWorker } from '@dam/events';
import { isImage, isVideo, type Asset } from './asset';
import type { Tx } from './ports';

/** The job step a conversion worker carries out. */
export const CONVERSIONS_STEP = 'conversions';

/** The steps of a video transcode job (spec "Job", CONTRACT §6). */
export const TRANSCODE_STEPS = ['preprocess', 'transcodes', 'addons', 'postprocess'];

/**
 * What an original needs before it is OK: one worker and its steps, or nothing (the asset is done as soon as
 * it is stored). Every video is probed (its metadata), even with an empty video profile.
 */
export function processingPlan(contentType: string): { worker: JobWorker; steps: string[] } | undefined {
  if (isImage(contentType)) return { worker: 'conversion', steps: [CONVERSIONS_STEP] };
  if (isVideo(contentType)) return { worker: 'transcode', steps: TRANSCODE_STEPS };
  return undefined;
}

/**
 * Opens the processing of an asset in the caller's transaction: its job and the command to the worker, or, when
 * nothing needs doing, OK at once for a NOT_READY asset (with `file-processed`). Also re-creates the profile's
 * outputs of a live asset (undelete): the job runs while it stays as it is. Returns the asset as it now is.
 */
export async function startProcessing(tx: Tx, asset: Asset, createdBy: number): Promise<Asset> {
  const plan = processingPlan(asset.contentType);
  if (!plan && asset.status !== 'NOT_READY') return asset;
  if (!plan) {
    const processed = await tx.assets.markProcessed(asset.groupId, asset.id);
    if (!processed) throw new Error(`asset ${asset.id} is not NOT_READY inside its own transaction`);
    await tx.events.write('file-processed', processed);
    return processed;
  }
  const job = await tx.jobs.create({ groupId: asset.groupId, type: 'processing', worker: plan.worker, assetIds: [asset.id], steps: plan.steps, createdBy });
  await tx.commands.send(job, asset, 0);
  return asset;
}

/**
 * The asset's status follows its jobs: a failed job makes it ERROR (with what failed), the last open job ending
 * well makes it OK. Only a NOT_READY asset moves, and each move writes `file-processed` once.
 */
export async function settleAsset(tx: Tx, groupId: number, assetId: string, failed?: Record<string, string>): Promise<'failed' | 'processed' | 'open' | 'unchanged'> {
  if (failed) {
    const asset = await tx.assets.markFailed(groupId, assetId, failed);
    if (!asset) return 'unchanged';
    await tx.events.write('file-processed', asset);
    return 'failed';
  }
  if ((await tx.jobs.openCount(groupId, assetId)) > 0) return 'open';
  const asset = await tx.assets.markProcessed(groupId, assetId);
  if (!asset) return 'unchanged';
  await tx.events.write('file-processed', asset);
  return 'processed';
}
