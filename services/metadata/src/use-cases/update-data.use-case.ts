import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { badRequest, forbidden, validationFailed } from '@dam/errors';
import type { AssetData } from '@dam/events';
import type { Logger } from '@dam/logging';
import { toAssetData, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound } from '../domain/asset.errors';
import { resolveData, validateCustomMetadata, type CustomMetadata } from '../domain/custom-metadata';
import type { RunInTransaction, Tx } from '../domain/ports';

export type UpdateDataResult = { applied: AssetData } | { queued: { id: string; status: 'QUEUED'; message: string } };

/** The body of Update Data: `mode` is required here (upload's custom_metadata defaults it to APPEND). */
export function parseUpdateData(body: unknown): CustomMetadata {
  if (typeof body === 'object' && body !== null && !('mode' in body)) {
    throw validationFailed([{ path: 'mode', message: 'is required: APPEND or REPLACE' }]);
  }
  return validateCustomMetadata(body, '');
}

/** The checks every update passes before it is applied or queued. */
function checkUpdatable(caller: Principal, asset: Asset | undefined): Asset {
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  if (asset.deletedAt) throw assetInTrash();
  if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may change only your own assets');
  if (asset.status === 'NOT_READY') throw badRequest('ASSET_NOT_READY', 'The asset is not ready: its data can be updated once it is processed');
  return asset;
}

async function apply(tx: Tx, asset: Asset, change: CustomMetadata): Promise<Asset> {
  const next = await resolveData(tx, asset.groupId, asset, change);
  const updated = await tx.assets.setData(asset.groupId, asset.id, next.data, next.dataSchemaId);
  await tx.events.write('file-data-updated', updated);
  return updated;
}

/**
 * Update Data (endpoint 12). Applied at once (200, the asset) when no other update of the asset is in flight;
 * otherwise, or with `async`, queued (202) and applied after the ones before it, in arrival order. Every client
 * error is answered now, whichever way it goes: queued requests were checked against the data of their time and
 * are checked again when applied.
 */
export async function updateData(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  change: CustomMetadata,
  async: boolean,
): Promise<UpdateDataResult> {
  return runInTransaction(async (tx) => {
    const locked = await tx.assets.findForUpdateNoWait(caller.group_id, id);
    const busy = locked === 'busy';
    const asset = checkUpdatable(caller, busy ? await tx.assets.findById(caller.group_id, id) : locked);
    if (busy || async || (await tx.dataUpdates.pending(asset.groupId, asset.id))) {
      await resolveData(tx, asset.groupId, asset, change);
      await tx.dataUpdates.enqueue(asset.groupId, asset.id, caller, change);
      const message = busy || !async ? 'Another update of this asset is in progress: this one is applied after it' : 'The update is queued and applied shortly';
      return { queued: { id: asset.id, status: 'QUEUED', message } };
    }
    return { applied: toAssetData(await apply(tx, asset, change)) };
  });
}

/**
 * Applies the oldest queued update of one asset (if any) in one transaction: rechecked, applied with its
 * `file-data-updated`, and removed. One that no longer applies (asset gone, now invalid) is dropped and logged,
 * so it never blocks the ones behind it. Returns whether there was one.
 */
export async function applyNextQueuedUpdate(runInTransaction: RunInTransaction, logger: Logger): Promise<boolean> {
  return runInTransaction(async (tx) => {
    const next = await tx.dataUpdates.claimNext();
    if (!next) return false;
    await tx.dataUpdates.remove(next.id);
    const asset = await tx.assets.findForUpdate(next.groupId, next.assetId);
    try {
      const change = validateCustomMetadata(next.body, '');
      await apply(tx, checkUpdatable(next.principal, asset), change);
    } catch (error) {
      if (!(error instanceof Error) || !('kind' in error)) throw error;
      logger.warn({ asset_id: next.assetId, group_id: next.groupId, update_id: next.id, err: { message: error.message } }, 'queued data update dropped');
    }
    return true;
  });
}
