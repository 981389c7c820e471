import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { conflict, forbidden, validationFailed } from '@dam/errors';
import { CUSTOM_CONVERSION_NAME, RESERVED_CONVERSION_KEYS } from '@dam/internal-api';
import { storedObjectsOf, type Asset, type StoredConversion } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound, conversionNotFound } from '../domain/asset.errors';
import type { RunInTransaction, Tx } from '../domain/ports';
import { publicSourceOf } from './public-access.use-case';
import { revokePublic } from './trash.use-case';

/** CONTRACT §11: a built-in key answers 409 before the name rule is checked; then 1-30 of `[A-Za-z0-9]` or 400. */
export function checkConversionName(name: string): void {
  if (RESERVED_CONVERSION_KEYS.has(name)) throw conflict('CONVERSION_KEY_RESERVED', `"${name}" is a built-in key`);
  if (!CUSTOM_CONVERSION_NAME.test(name)) {
    throw validationFailed([{ path: 'conversion_name', message: 'must be 1-30 characters of A-Z, a-z, 0-9' }]);
  }
}

async function editableAsset(tx: Pick<Tx, 'assets'>, caller: Principal, id: string): Promise<Asset> {
  const asset = await tx.assets.findForUpdate(caller.group_id, id);
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  if (asset.deletedAt) throw assetInTrash();
  if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may change only your own assets');
  return asset;
}

/** Before the body is read: the asset the caller may add a conversion to (its current original's checksum). */
export function assetForNewConversion(runInTransaction: RunInTransaction, caller: Principal, id: string): Promise<Asset> {
  return runInTransaction((tx) => editableAsset(tx, caller, id));
}

export interface AddedConversion {
  key: string;
  width: number | null;
  height: number | null;
  size: number;
  content_type: string;
}

/**
 * Add Conversion (endpoint 13): records a stored file as the asset's conversion `key` and raises
 * `file-processed`. The file was stored under the checksum the asset had when the request began; if the
 * original was replaced meanwhile the file belongs to nothing (409, the caller removes it).
 */
export async function recordCustomConversion(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  checksum: string,
  key: string,
  file: Omit<StoredConversion, 'public'>,
): Promise<AddedConversion> {
  return runInTransaction(async (tx) => {
    const asset = await editableAsset(tx, caller, id);
    if (asset.checksum !== checksum) throw conflict('ASSET_REPLACED', 'The original was replaced while the conversion was uploaded');
    const previous = asset.conversions[key];
    if (previous && previous.object_key !== file.object_key) await tx.deletions.enqueue([previous.object_key]);
    // An object written again at a key queued for deletion (deleted, then added again) must stay.
    await tx.deletions.cancelUnder(file.object_key, 'the conversion was added again before they were removed');
    const updated = await tx.assets.setConversions(asset.groupId, asset.id, {
      ...asset.conversions,
      [key]: { ...file, public: previous?.public ?? false },
    });
    // A public key stays public with the new bytes: its copy is made again (an attachment if they are active content).
    const source = publicSourceOf(updated, key);
    if (source) await tx.publicObjects.refresh(asset.groupId, asset.id, [source]);
    await tx.events.write('file-processed', updated);
    return { key, width: file.width, height: file.height, size: file.size, content_type: file.content_type };
  });
}

/** Delete Conversion (endpoint 14): 404 when the asset or the conversion does not exist; `file-deleted` otherwise. */
export async function deleteCustomConversion(runInTransaction: RunInTransaction, caller: Principal, id: string, key: string) {
  return runInTransaction(async (tx) => {
    const asset = await editableAsset(tx, caller, id);
    const existing = Object.hasOwn(asset.conversions, key) ? asset.conversions[key] : undefined;
    if (!existing) throw conversionNotFound(key);
    const kept = Object.fromEntries(Object.entries(asset.conversions).filter(([k]) => k !== key));
    const updated = await revokePublic(tx, await tx.assets.setConversions(asset.groupId, asset.id, kept), [key]);
    const removing = [{ key: storedObjectsOf(existing), label: key }];
    await tx.deletions.enqueue(removing.map((o) => o.key));
    await tx.events.writeDeletion(updated, { id, event: 'file-deleted', keys: [key], status: 'OK', message: `Deleted: ${key}` }, removing);
    return { id, deleted: [key] };
  });
}
