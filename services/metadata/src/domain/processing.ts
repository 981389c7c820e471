import type { JobSettings, JobWorker } from '@dam/events';
import type { GroupSettings } from '@dam/internal-api';
import { processingPlanOf } from '@dam/jobs';
import { isImage, type Asset } from './asset';
import type { Job } from './job';
import type { Tx } from './ports';

const record = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const keyList = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.filter((k): k is string => typeof k === 'string') : undefined);

/**
 * What the worker of a processing job reads of the group's settings, taken when the job is opened and carried with it
 * (jobs.params.settings, the command's `settings`): the worker never asks auth, and the job made again after a lease
 * ran out makes what was asked when it was opened. The same shape as the settings (the workers' planners read either):
 * for conversion the image profile, the custom specs of the keys it makes (`keys` of a re-run, else the profile's) and
 * `keep_gps`; for transcode the video profile, the watermark and the automatic video addons it makes.
 */
export function jobSettingsOf(settings: GroupSettings, worker: JobWorker, keys?: readonly string[]): JobSettings {
  const conversions = record(settings.conversions);
  const profile = record(conversions.profile);
  if (worker === 'transcode') {
    const video = keyList(profile.video);
    const auto = keyList(record(record(settings.addons).auto).video);
    const watermark = conversions.watermark_asset_id;
    return {
      conversions: { ...(video ? { profile: { video } } : {}), watermark_asset_id: typeof watermark === 'string' ? watermark : null },
      ...(auto ? { addons: { auto: { video: auto } } } : {}),
    };
  }
  const image = keyList(profile.image);
  const custom = record(conversions.custom);
  const made = keys ?? image ?? [];
  return {
    conversions: {
      ...(image ? { profile: { image } } : {}),
      custom: Object.fromEntries(made.filter((k) => Object.hasOwn(custom, k)).map((k) => [k, custom[k]])),
    },
    metadata: { keep_gps: record(settings.metadata).keep_gps === true },
  };
}

/**
 * The group's automatic image addons (`addons.auto.image`) for one original, resolved before the transaction
 * (settings from auth, model states from the addon service): those to run, and those whose model is not available
 * (not run; `addons_info.<addon>.available: false`). Video addons are made by the transcode job itself.
 */
export interface AutoAddons {
  run: readonly string[];
  unavailable: readonly string[];
  /** The group's settings they were read from, read with them: the processing job carries its part (jobSettingsOf). */
  settings?: GroupSettings;
  /**
   * The settings could not be read (auth unreachable): nothing is known yet; the processing job opens the automatic
   * addons when it reports, and its worker reads the settings itself. An upload is never refused for it.
   */
  deferred?: boolean;
}

export const NO_AUTO_ADDONS: AutoAddons = { run: [], unavailable: [] };

/** Resolves the automatic addons of a group for an original of this content type. */
export type AutoAddonsOf = (groupId: number, contentType: string) => Promise<AutoAddons>;

/**
 * Opens the processing of an asset in the caller's transaction: its job and the command to the worker, and for an
 * image the group's automatic addons, each a job of its own beside it (they read the original, not a conversion, so
 * they need not wait for it); or, when nothing needs doing, OK at once for a NOT_READY asset (with `file-processed`).
 * A NOT_READY asset stays so until every job opened here has ended (settleAsset, CONTRACT §16). Also re-creates the
 * profile's outputs of a live asset (undelete): the job runs while it stays as it is. `auto` (asked before the
 * transaction) also brings the group's settings, whose part the job carries. Returns the asset as it now is.
 */
export async function startProcessing(tx: Tx, asset: Asset, createdBy: number, auto: AutoAddons = NO_AUTO_ADDONS): Promise<Asset> {
  const plan = processingPlanOf(asset.contentType);
  if (!plan && asset.status !== 'NOT_READY') return asset;
  if (!plan) {
    await settleAsset(tx, asset.groupId, asset.id);
    return (await tx.assets.findById(asset.groupId, asset.id)) ?? asset;
  }
  // The settings the worker reads go with the job (a job opened without them has its worker read them, as before).
  const params = {
    ...(auto.settings ? { settings: jobSettingsOf(auto.settings, plan.worker) } : {}),
    ...(auto.deferred && isImage(asset.contentType) ? { autoAddonsDeferred: true } : {}),
  };
  const job = await tx.jobs.create({
    groupId: asset.groupId,
    type: 'processing',
    worker: plan.worker,
    params,
    assetIds: [asset.id],
    steps: plan.steps,
    createdBy,
  });
  await tx.commands.send(job, asset, 0);
  if (isImage(asset.contentType)) return openAutoAddons(tx, asset, auto, createdBy);
  return asset;
}

/** One run of an addon on an asset: its job, and the command to the addon worker, in the caller's transaction. */
export async function openAddonJob(tx: Tx, asset: Asset, addon: string, createdBy: number): Promise<Job> {
  const job = await tx.jobs.create({
    groupId: asset.groupId,
    type: 'addon',
    worker: 'addon',
    params: { keys: [addon] },
    assetIds: [asset.id],
    steps: [],
    createdBy,
  });
  await tx.commands.send(job, asset, 0);
  return job;
}

/**
 * The automatic addons of one original: a job (and its command) for each that can run; those whose model is not
 * available are not run and say so in `addons_info`. Returns the asset as it now is.
 */
export async function openAutoAddons(tx: Tx, asset: Asset, auto: AutoAddons, createdBy: number): Promise<Asset> {
  for (const addon of new Set(auto.run)) await openAddonJob(tx, asset, addon, createdBy);
  if (auto.unavailable.length === 0) return asset;
  return tx.assets.markAddonsUnavailable(asset.groupId, asset.id, [...new Set(auto.unavailable)]);
}

/**
 * The asset's status follows the jobs of its processing round (its processing or ingest job and its automatic
 * addons): while one is open it stays NOT_READY, what failed is noted in its `errors`; when the last one ends it
 * becomes ERROR if anything failed, else OK, and `file-processed` is written once, with everything the round made.
 * The asset's row lock is taken before the check, so of two jobs ending at once (two replicas) the later sees the
 * other's end and settles it; the earlier sees the later still open. Only a NOT_READY asset moves.
 */
export async function settleAsset(tx: Tx, groupId: number, assetId: string, failed?: Record<string, string>): Promise<'failed' | 'processed' | 'unchanged'> {
  const locked = await tx.assets.findForUpdate(groupId, assetId);
  // A trashed asset's round was ended by the trash (an addon job still running may report later): nothing to announce.
  if (locked?.status !== 'NOT_READY' || locked.deletedAt) return 'unchanged';
  if (failed) await tx.assets.noteFailure(groupId, assetId, failed);
  const asset = await tx.assets.settle(groupId, assetId);
  if (!asset) return 'unchanged';
  await tx.events.write('file-processed', asset);
  return asset.status === 'ERROR' ? 'failed' : 'processed';
}
