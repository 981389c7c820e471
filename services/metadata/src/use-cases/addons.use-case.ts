import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { badRequest, forbidden, isDependencyUnavailable, isUnavailable, notFound, unavailable } from '@dam/errors';
import type { GroupSettings } from '@dam/internal-api';
import { ADDONS, CONVERSION_ADDONS, isImageAddon } from '@dam/jobs';
import { isImage, isVideo, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound } from '../domain/asset.errors';
import type { Job } from '../domain/job';
import type { RunInTransaction, Tx } from '../domain/ports';
import { requestProcessing } from './process.use-case';
import { NO_AUTO_ADDONS, openAddonJob, type AutoAddonsOf } from '../domain/processing';

/** The addons of CONTRACT §6, as the pipeline declares them (@dam/jobs). */
export { ADDONS, CONVERSION_ADDONS };

export const addonNotFound = (addon: string) => notFound('ADDON_NOT_FOUND', `No addon ${addon}: one of ${ADDONS.join(', ')}`);

/**
 * `POST /api/v1/assets/{id}/addons/{addon}` (CONTRACT §6): one run as a job (202). Unknown addon 404; an asset not
 * `OK` or of a type the addon does not apply to 400; `storyboard` is a transcode of the video.
 */
export async function requestAddon(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  addon: string,
  settingsOf: (groupId: number) => Promise<GroupSettings>,
  /** Why the addon's model cannot run (it failed to load), or undefined when it can or may. */
  unavailableReason: (addon: string) => Promise<string | undefined> = async () => undefined,
): Promise<Job> {
  if (!ADDONS.includes(addon)) throw addonNotFound(addon);
  if (addon === 'storyboard') {
    await checkRunnable(runInTransaction, caller, id, addon, isVideo);
    return requestProcessing(runInTransaction, caller, id, ['storyboard'], settingsOf);
  }
  // Asked before the transaction (no row lock held while the addon service answers), told after the asset's checks.
  const reason = await unavailableReason(addon);
  return runInTransaction(async (tx) => {
    const asset = await tx.assets.findForUpdate(caller.group_id, id);
    runnable(caller, asset, addon, isImage);
    if (!isImageAddon(addon)) throw unavailable(`The ${addon} addon is not available on this deployment yet`, 'ADDON_UNAVAILABLE');
    if (reason) throw unavailable(`The ${addon} addon cannot run on this deployment now: ${reason}`, 'ADDON_UNAVAILABLE');
    const [job] = await openAddonJobs(tx, asset, [addon], caller.user_id);
    return job as Job;
  });
}

/** One addon job per addon (the image addons this version ships; others are skipped), each with its command. */
export async function openAddonJobs(tx: Tx, asset: Asset, addons: readonly string[], createdBy: number): Promise<Job[]> {
  const jobs: Job[] = [];
  for (const addon of new Set(addons)) {
    if (isImageAddon(addon)) jobs.push(await openAddonJob(tx, asset, addon, createdBy));
  }
  return jobs;
}

/**
 * The group's automatic addons for an original (CONTRACT §3 `addons.auto.image`, §16), asked before the transaction
 * that opens them: an image addon this version ships and whose model did not fail to load runs (one still loading
 * runs once it has); any other named addon is not run and is shown `available: false`. Not an image: none (a video's
 * are made by its transcode job). For an image or a video, the settings read come along: its job carries them.
 */
export function autoAddonsPlanner(
  settingsOf: (groupId: number) => Promise<GroupSettings>,
  unavailableReason: (addon: string) => Promise<string | undefined> = async () => undefined,
): AutoAddonsOf {
  return async (groupId, contentType) => {
    if (!isImage(contentType) && !isVideo(contentType)) return NO_AUTO_ADDONS;
    let settings: GroupSettings;
    try {
      settings = await settingsOf(groupId);
    } catch (error) {
      // Auth unreachable: the upload is taken all the same; the processing job resolves them when it reports.
      if (isUnavailable(error) || isDependencyUnavailable(error)) return { ...NO_AUTO_ADDONS, deferred: true };
      throw error;
    }
    if (!isImage(contentType)) return { ...NO_AUTO_ADDONS, settings };
    const auto = (settings.addons as { auto?: { image?: unknown } } | undefined)?.auto?.image;
    const named = Array.isArray(auto) ? [...new Set(auto.filter((a): a is string => typeof a === 'string' && isImageAddon(a)))] : [];
    const run: string[] = [];
    const unavailable: string[] = [];
    for (const addon of named) {
      const runnable = isImageAddon(addon) && (await unavailableReason(addon)) === undefined;
      (runnable ? run : unavailable).push(addon);
    }
    return { run, unavailable, settings };
  };
}

async function checkRunnable(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  addon: string,
  applies: (contentType: string) => boolean,
): Promise<void> {
  await runInTransaction(async (tx) => runnable(caller, await tx.assets.findById(caller.group_id, id), addon, applies));
}

function runnable(caller: Principal, asset: Asset | undefined, addon: string, applies: (contentType: string) => boolean): asserts asset is Asset {
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  // A run rewrites the asset's addon results (and raises events in its name): the right to edit it, as Update Data.
  if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may run addons only on assets you may edit');
  if (asset.deletedAt) throw assetInTrash();
  if (!applies(asset.contentType)) throw badRequest('ADDON_NOT_APPLICABLE', `The ${addon} addon does not apply to ${asset.contentType}`);
  if (asset.status !== 'OK') throw badRequest('ASSET_NOT_READY', `The asset is ${asset.status}: addons run on assets that are OK`);
}

/** `GET .../addons/{addon}`: the result (a conversion addon: its key and size); 404 while none exists. */
export function addonResultOf(asset: Asset, addon: string): Record<string, unknown> {
  if (!ADDONS.includes(addon)) throw addonNotFound(addon);
  if (CONVERSION_ADDONS.has(addon)) {
    const c = asset.conversions[addon];
    if (c) return { key: addon, width: c.width, height: c.height, size: c.size };
  } else {
    const result = asset.addonResults[addon];
    if (result) return result;
  }
  throw notFound('ADDON_RESULT_NOT_FOUND', `The ${addon} addon has not run on this asset`);
}
