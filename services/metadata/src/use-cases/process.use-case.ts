import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { badRequest, forbidden, validationFailed } from '@dam/errors';
import { BUILTIN_VIDEO_KEYS, type GroupSettings } from '@dam/internal-api';
import { isImage, isVideo } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound } from '../domain/asset.errors';
import type { Job } from '../domain/job';
import type { RunInTransaction } from '../domain/ports';
import { processingPlanOf } from '@dam/jobs';
import { jobSettingsOf } from '../domain/processing';

/** Built-in image keys the conversion worker makes. */
const BUILT_IMAGE_KEYS = ['smart_imaging', 'deepzoom'];

/** The keys a `process` request may name for this asset: built-ins of its type and the group's custom conversions. */
export function applicableKeys(contentType: string, settings: GroupSettings): Set<string> {
  if (isVideo(contentType)) return new Set(BUILTIN_VIDEO_KEYS);
  // An image type conversion cannot decode (an icon, PSD, camera raw) has nothing to be processed into.
  if (!isImage(contentType) || !processingPlanOf(contentType)) return new Set();
  const conversions = settings.conversions as { custom?: Record<string, unknown> } | undefined;
  return new Set([...BUILT_IMAGE_KEYS, ...Object.keys(conversions?.custom ?? {})]);
}

/**
 * `POST /api/v1/assets/{id}/process` (CONTRACT §6): the named outputs made again (or for the first time) as a
 * `processing` job; `file-processed` follows when they exist. Unknown or inapplicable keys → 400.
 */
export async function requestProcessing(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  keys: string[],
  settingsOf: (groupId: number) => Promise<GroupSettings>,
): Promise<Job> {
  const wanted = [...new Set(keys)];
  return runInTransaction(async (tx) => {
    const asset = await tx.assets.findForUpdate(caller.group_id, id);
    if (!asset || !canRead(caller, asset)) throw assetNotFound();
    // Processing rewrites the asset's conversions and raises events in its name: the right to edit it, as Update Data.
    if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may process only assets you may edit');
    if (asset.deletedAt) throw assetInTrash();
    if (asset.status === 'NOT_READY') throw badRequest('ASSET_NOT_READY', 'The asset is still being processed');
    const settings = await settingsOf(asset.groupId);
    const allowed = applicableKeys(asset.contentType, settings);
    const refused = wanted.filter((k) => !allowed.has(k));
    if (refused.length > 0) {
      throw validationFailed(
        refused.map((k) => ({ path: 'keys', message: `"${k}" is not a key this ${asset.contentType} asset can be processed into` })),
        'Some keys are unknown or do not apply to this asset',
      );
    }
    // Applicable keys imply a worker: images go to conversion, videos to transcode.
    const plan = processingPlanOf(asset.contentType);
    if (!plan) throw new Error(`no worker processes ${asset.contentType}`);
    const job = await tx.jobs.create({
      groupId: asset.groupId,
      type: 'processing',
      worker: plan.worker,
      // The settings of now, taken with the job (a request made again after a settings change makes what they say then).
      params: { keys: wanted, settings: jobSettingsOf(settings, plan.worker, wanted) },
      assetIds: [asset.id],
      steps: plan.steps,
      createdBy: caller.user_id,
    });
    await tx.commands.send(job, asset, 0);
    return job;
  });
}
