import { canDeleteAsset, hasPermission, PERMISSION, type Principal } from '@dam/auth-tokens';
import { conflict, forbidden, validationFailed } from '@dam/errors';
import type { DeletionPayload } from '@dam/events';
import type { GroupSettings } from '@dam/internal-api';
import { conversionsPrefix } from '@dam/storage';
import { addonResultsWithout } from '../domain/addon-labels';
import { ADDONS } from './addons.use-case';
import { storedObjectsOf, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound } from '../domain/asset.errors';
import { EXPORT_STEP } from '../domain/bulk-delete-export';
import type { Job } from '../domain/job';
import type { RemovedObject, RunInTransaction, Tx } from '../domain/ports';
import { NO_AUTO_ADDONS, startProcessing } from '../domain/processing';

export interface DeleteResult {
  id: string;
  keys: string[];
  status: 'OK';
}

/** A live asset the caller may delete: 404 when it cannot even see it, 403 when it sees but may not delete. */
async function deletableAsset(tx: Tx, caller: Principal, id: string, trashed: boolean): Promise<Asset> {
  const asset = await tx.assets.findForUpdate(caller.group_id, id);
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  if (!trashed && asset.deletedAt) throw assetInTrash();
  if (trashed && !asset.deletedAt) throw conflict('ASSET_NOT_IN_TRASH', 'The asset is not in the trash');
  if (!canDeleteAsset(caller, asset.creatorId)) throw forbidden('You may delete only your own assets');
  return asset;
}

/** The keys stop being public: out of `urls.public` and out of the bucket policy. */
export async function revokePublic(tx: Tx, asset: Asset, keys: readonly string[]): Promise<Asset> {
  const still = Object.fromEntries(Object.entries(asset.publicUrls).filter(([k]) => !keys.includes(k)));
  if (Object.keys(still).length === Object.keys(asset.publicUrls).length) return asset;
  await tx.publicObjects.revoke(asset.groupId, asset.id, keys);
  return tx.assets.setPublicUrls(asset.groupId, asset.id, still);
}

/** Every object of the asset's outputs (any original), as deletion-queue prefixes. */
const outputsPrefix = (asset: Asset): string => conversionsPrefix(String(asset.groupId), asset.id);

/**
 * The addons whose results a Delete removes (CONTRACT §16): the addon keys listed, and the conversion addons
 * (background_removal, storyboard) whose conversion goes, each only when the asset has its result. An addon key
 * without a result is ignored, as a conversion key without an output is.
 */
function addonsToRemove(asset: Asset, keys: readonly string[], removedConversions: readonly string[]): string[] {
  const hasResult = (addon: string): boolean =>
    Object.hasOwn(asset.addonResults, addon) || Object.hasOwn(asset.conversions, addon) || asset.addonsInfo[addon]?.available === true;
  return [...new Set([...keys, ...removedConversions])].filter((key) => ADDONS.includes(key) && hasResult(key));
}

/**
 * The change of one Delete (endpoint 6) inside the caller's transaction. `original` moves the asset to the trash
 * (its original bytes stay for Undelete) and removes every conversion, `*` every conversion, other keys the
 * conversions of those names and the results of the addons of those names; unknown and inapplicable keys are
 * ignored. Removed bytes are queued for deletion and `file-deleted` carries the deletion payload, sent once they
 * are gone (OK), given up (ERROR, `errors` naming the key) or kept because they became live again (MAYBE).
 */
export async function trashOrTrim(tx: Tx, asset: Asset, keys: string[]): Promise<string> {
  const original = keys.includes('original');
  const all = original || keys.includes('*');
  const removed = all ? Object.keys(asset.conversions) : [...new Set(keys)].filter((k) => Object.hasOwn(asset.conversions, k));
  let message: string;
  let after: Asset = asset;
  // What this Delete queues for removal: its file-deleted tells how that ended (OK, or ERROR with the key, MAYBE).
  let removing: RemovedObject[] = [];
  if (original) {
    after = (await tx.assets.moveToTrash(asset.groupId, asset.id)) ?? asset;
    // Nothing of a trashed asset stays anonymously readable.
    await tx.publicObjects.revoke(asset.groupId, asset.id);
    // Whatever was still being made for it stops mattering; every output (recorded or half-made) goes.
    await tx.jobs.finishOpen(asset.groupId, asset.id, 'processing', { status: 'ERROR', error: 'the asset was deleted' });
    removing = [{ key: outputsPrefix(asset), label: 'original' }];
    message = 'The asset was moved to the trash; its conversions were deleted';
  } else {
    if (removed.length > 0) {
      const kept = Object.fromEntries(Object.entries(asset.conversions).filter(([k]) => !removed.includes(k)));
      after = await tx.assets.setConversions(asset.groupId, asset.id, kept);
      after = await revokePublic(tx, after, removed);
      removing = removed.flatMap((k) => (asset.conversions[k] ? [{ key: storedObjectsOf(asset.conversions[k]), label: k }] : []));
    }
    const addons = addonsToRemove(asset, keys, removed);
    if (addons.length > 0) after = await tx.assets.removeAddonResults(asset.groupId, asset.id, addons, addonResultsWithout(after.addonResults, addons));
    const deleted = [...new Set([...removed, ...addons])];
    message = deleted.length > 0 ? `Deleted: ${deleted.join(', ')}` : 'Nothing to delete: no listed key applies to the asset';
  }
  await tx.deletions.enqueue(removing.map((o) => o.key));
  const payload: DeletionPayload = { id: asset.id, event: 'file-deleted', keys, status: 'OK', message };
  await tx.events.writeDeletion(after, payload, removing);
  return message;
}

export async function deleteAsset(runInTransaction: RunInTransaction, caller: Principal, id: string, keys: string[]): Promise<DeleteResult> {
  return runInTransaction(async (tx) => {
    const asset = await deletableAsset(tx, caller, id, false);
    await trashOrTrim(tx, asset, keys);
    return { id, keys, status: 'OK' };
  });
}

/**
 * Undelete (endpoint 8): out of the trash, the profile's conversions made again (a processing job), and
 * `file-undeleted`. Queued deletions under the asset's outputs are dropped first, so none can remove a new output.
 */
export async function undeleteAsset(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  keys: string[],
  /** The group's settings (asked before the transaction): the processing job carries its worker's part of them. */
  settingsOf?: (groupId: number) => Promise<GroupSettings>,
): Promise<DeleteResult> {
  if (keys.length !== 1 || keys[0] !== 'original') {
    throw validationFailed([{ path: 'keys', message: 'must be ["original"]: only the original can be undeleted' }]);
  }
  const settings = settingsOf ? await settingsOf(caller.group_id) : undefined;
  return runInTransaction(async (tx) => {
    const asset = await deletableAsset(tx, caller, id, true);
    const restoring = 'the asset was restored before they were removed';
    await tx.deletions.cancelUnder(outputsPrefix(asset), restoring);
    // Its file-deleted comes first, whatever its removals' state (CONTRACT §10: one asset's events in order).
    await tx.deletions.releaseHeld(asset.id, restoring);
    const restored = await tx.assets.restore(asset.groupId, asset.id);
    if (!restored) throw assetNotFound();
    await tx.events.writeDeletion(restored, {
      id,
      event: 'file-undeleted',
      keys,
      status: 'OK',
      message: 'The asset was restored; its conversions are being made again',
    });
    await startProcessing(tx, restored, caller.user_id, settings ? { ...NO_AUTO_ADDONS, settings } : NO_AUTO_ADDONS);
    return { id, keys, status: 'OK' };
  });
}

/** Purge (endpoint 9): a job that removes every asset in the group's trash for good. */
export async function requestPurge(runInTransaction: RunInTransaction, caller: Principal): Promise<Job> {
  if (!hasPermission(caller, PERMISSION.PURGE_TRASH)) throw forbidden('Purging the trash needs PURGE_TRASH (admin)');
  return runInTransaction((tx) =>
    tx.jobs.create({ groupId: caller.group_id, type: 'purge', worker: null, assetIds: [], steps: ['purge'], createdBy: caller.user_id }),
  );
}

export interface BulkDeleteLimits {
  maxAssets: number;
  maxRangeDays: number;
  /** The group's `bulk_delete.export`: the job keeps the deleted assets' records (its step `export`). */
  exportRecords?: boolean;
}

export interface BulkDeleteAccepted {
  status: 'QUEUED';
  message: string;
  job_id: number;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Delete - Bulk (endpoint 7): the oldest `maxAssets` live assets uploaded in the range (only the caller's own for
 * a role that deletes only its own) are fixed now, in a job that trashes them one by one.
 */
export async function requestBulkDelete(
  runInTransaction: RunInTransaction,
  caller: Principal,
  range: { from: Date; to: Date },
  limits: BulkDeleteLimits,
): Promise<BulkDeleteAccepted> {
  if (range.to.getTime() < range.from.getTime()) throw validationFailed([{ path: 'end_time', message: 'must not be before start_time' }]);
  if (range.to.getTime() - range.from.getTime() > limits.maxRangeDays * DAY_MS) {
    throw validationFailed([{ path: 'end_time', message: `the range may span at most ${limits.maxRangeDays} days` }]);
  }
  const ownOnly = !hasPermission(caller, PERMISSION.DELETE_ASSET);
  return runInTransaction(async (tx) => {
    const { ids, total } = await tx.assets.uploadedBetween(caller.group_id, range.from, range.to, limits.maxAssets, ownOnly ? caller.user_id : undefined);
    const job = await tx.jobs.create({
      groupId: caller.group_id,
      type: 'bulk_delete',
      worker: null,
      assetIds: ids,
      steps: limits.exportRecords ? ['delete', EXPORT_STEP] : ['delete'],
      createdBy: caller.user_id,
    });
    const remain = total - ids.length;
    const message =
      remain > 0
        ? `${ids.length} of ${total} assets queued for deletion (the oldest first); ${remain} remain: send the request again for them`
        : `${ids.length} assets queued for deletion`;
    return { status: 'QUEUED', message, job_id: job.id };
  });
}
