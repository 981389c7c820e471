import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { forbidden, validationFailed } from '@dam/errors';
import { conversionsPrefix } from '@dam/storage';
import { toAssetData, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound } from '../domain/asset.errors';
import { resolveData, validateCustomMetadata } from '../domain/custom-metadata';
import type { StoredFile } from './create-assets.use-case';
import { isOwnOriginalKey } from '../domain/object-keys';
import type { RunInTransaction, Tx } from '../domain/ports';
import { NO_AUTO_ADDONS, startProcessing, type AutoAddonsOf } from '../domain/processing';

/** How long a replaced original stays in the bucket for downloads that were already streaming it (default). */
export const REPLACED_ORIGINAL_GRACE_MS = 10 * 60_000;

/** The asset the caller may replace: 404 when it cannot see it (or it is in the trash), 403 when it may not edit it. */
export async function replaceableAsset(tx: Pick<Tx, 'assets'>, caller: Principal, id: string): Promise<Asset> {
  const asset = await tx.assets.findForUpdate(caller.group_id, id);
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  if (asset.deletedAt) throw assetInTrash();
  if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may replace only your own assets');
  return asset;
}

export async function checkReplaceable(runInTransaction: RunInTransaction, caller: Principal, id: string): Promise<void> {
  await runInTransaction((tx) => replaceableAsset(tx, caller, id));
}

/**
 * Replace Asset Content (endpoint 4): the asset keeps its id and takes the new original (stored by upload next
 * to the old one). In one transaction: the record points at the new object (so a download reads the old bytes
 * or the new, never a mix), open processing ends, the old outputs and the old original are queued for deletion,
 * the asset is NOT_READY again with `file-saved`, and the profile's processing and the automatic addons start over
 * (`autoAddonsOf`, asked before the transaction).
 */
export async function replaceOriginal(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  file: Omit<StoredFile, 'id'>,
  customMetadata?: unknown,
  graceMs = REPLACED_ORIGINAL_GRACE_MS,
  autoAddonsOf?: AutoAddonsOf,
) {
  if (!isOwnOriginalKey(caller.group_id, id, file.object_key)) {
    throw validationFailed([{ path: 'object_key', message: 'is not an original key of this asset' }]);
  }
  const custom = customMetadata === undefined ? undefined : validateCustomMetadata(customMetadata, 'custom_metadata');
  const auto = autoAddonsOf ? await autoAddonsOf(caller.group_id, file.content_type) : NO_AUTO_ADDONS;
  return runInTransaction(async (tx) => {
    const asset = await replaceableAsset(tx, caller, id);
    const next = custom ? await resolveData(tx, asset.groupId, asset, custom, 'custom_metadata') : asset;
    await tx.jobs.finishOpen(asset.groupId, asset.id, 'processing', { status: 'ERROR', error: 'the original was replaced' });
    // An addon still running reads the old original: its result would describe bytes the asset no longer has.
    await tx.jobs.finishOpen(asset.groupId, asset.id, 'addon', { status: 'ERROR', error: 'the original was replaced' });
    // The old objects are going: none of them stays public (the record's public keys are reset with it).
    await tx.publicObjects.revoke(asset.groupId, asset.id);
    const replaced = await tx.assets.replaceOriginal(asset.groupId, asset.id, {
      name: file.name,
      size: file.size,
      checksum: file.checksum,
      contentType: file.content_type,
      objectKey: file.object_key,
      metadata: file.metadata,
      data: next.data,
      dataSchemaId: next.dataSchemaId,
    });
    const group = String(asset.groupId);
    // Outputs of the old original live under its checksum: same bytes again means the same keys, which the new
    // job overwrites, so only a different checksum sends them away.
    if (asset.checksum !== file.checksum) await tx.deletions.enqueue([conversionsPrefix(group, asset.id, asset.checksum)]);
    if (asset.objectKey !== file.object_key) await tx.deletions.enqueue([asset.objectKey], graceMs);
    await tx.events.write('file-saved', replaced);
    return toAssetData(await startProcessing(tx, replaced, caller.user_id, auto));
  });
}
