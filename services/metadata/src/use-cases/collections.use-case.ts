import { randomBytes } from 'node:crypto';
import { hasPermission, PERMISSION, readsOwnOnly, type Principal } from '@dam/auth-tokens';
import { AppError, badRequest, conflict, forbidden, notFound } from '@dam/errors';
import { canRead } from '../domain/asset-access';
import { BASKET_NAME, COLLECTION_MAX_ASSETS, type Collection, type CollectionAssetView } from '../domain/collection';
import type { Tx } from '../domain/ports';

export const collectionNotFound = () => notFound('COLLECTION_NOT_FOUND', 'The collection does not exist');
const collectionFull = (present: number, asked: number) =>
  conflict('COLLECTION_FULL', `A collection holds at most ${COLLECTION_MAX_ASSETS} assets (it has ${present}, ${asked} more asked)`);
const basketFixed = () => badRequest('SELECTED_ASSETS_FIXED', `${BASKET_NAME} cannot be renamed, shared or deleted`);

/** The caller's SELECTED_ASSETS, made on first use. */
export async function basketOf(tx: Tx, caller: Principal): Promise<Collection> {
  const existing = await tx.collections.findBasket(caller.group_id, caller.user_id, countedFor(caller));
  if (existing) return existing;
  const made = await tx.collections.createBasket({ id: newCollectionId(), groupId: caller.group_id, ownerId: caller.user_id, name: BASKET_NAME });
  if (made) await tx.events.writeCollectionState(made, false);
  return (await tx.collections.findBasket(caller.group_id, caller.user_id, countedFor(caller))) as Collection;
}

const newCollectionId = (): string => randomBytes(16).toString('hex');

/** Whose members a collection's `asset_count` counts for this caller: a reader of its own assets only counts those. */
export const countedFor = (caller: Principal): number | undefined => (readsOwnOnly(caller) ? caller.user_id : undefined);

/** A collection the caller sees (its own, or shared in its group); `SELECTED_ASSETS` names the caller's basket. */
export async function visibleCollection(tx: Tx, caller: Principal, id: string, lock = false): Promise<Collection> {
  if (id === BASKET_NAME) {
    const basket = await basketOf(tx, caller);
    return lock ? ((await tx.collections.find(caller.group_id, basket.id, true, countedFor(caller))) as Collection) : basket;
  }
  const c = await tx.collections.find(caller.group_id, id, lock, countedFor(caller));
  if (!c || (!c.shared && c.ownerId !== caller.user_id)) throw collectionNotFound();
  return c;
}

/** Renaming, sharing and deleting: the owner, or a role that edits every asset of the group (ADMIN, MANAGER). */
function mayChange(caller: Principal, c: Collection): void {
  if (c.ownerId !== caller.user_id && !hasPermission(caller, PERMISSION.EDIT_ASSET)) {
    throw forbidden('Only its owner or a manager may change this collection', 'COLLECTION_NOT_OWNED');
  }
}

export async function createCollection(tx: Tx, caller: Principal, input: { name: string; shared: boolean }): Promise<Collection> {
  if (input.name === BASKET_NAME) throw badRequest('NAME_RESERVED', `${BASKET_NAME} is every user's own basket`, [{ path: 'name', message: 'reserved' }]);
  const c = await tx.collections.create({ id: newCollectionId(), groupId: caller.group_id, ownerId: caller.user_id, name: input.name, shared: input.shared });
  await tx.events.writeCollectionState(c, false);
  return c;
}

export async function updateCollection(tx: Tx, caller: Principal, id: string, change: { name?: string; shared?: boolean }): Promise<Collection> {
  const c = await visibleCollection(tx, caller, id, true);
  if (c.basket) throw basketFixed();
  mayChange(caller, c);
  if (change.name === BASKET_NAME) throw badRequest('NAME_RESERVED', `${BASKET_NAME} is every user's own basket`, [{ path: 'name', message: 'reserved' }]);
  const updated = (await tx.collections.update(c.groupId, c.id, change, countedFor(caller))) as Collection;
  if (updated.shared !== c.shared) await tx.events.writeCollectionState(updated, false);
  return updated;
}

export async function deleteCollection(tx: Tx, caller: Principal, id: string): Promise<Collection> {
  const c = await visibleCollection(tx, caller, id, true);
  if (c.basket) throw basketFixed();
  mayChange(caller, c);
  const members = await tx.collections.memberIds(c.id);
  await tx.collections.lockMemberships(members);
  await tx.collections.delete(c.groupId, c.id);
  await publishMemberships(tx, c.groupId, members);
  await tx.events.writeCollectionState(c, true);
  return c;
}

/**
 * Adds assets: every id must be an asset of the group the caller reads and not in the trash (404 otherwise,
 * nothing added); more than the limit in all → 409, nothing added, however many come in one call (CONTRACT §16).
 * Ids already in it are kept once. The collection's row lock makes concurrent adds count one after the other.
 */
export async function addToCollection(tx: Tx, caller: Principal, id: string, ids: string[]): Promise<Collection> {
  const c = await visibleCollection(tx, caller, id, true);
  const wanted = [...new Set(ids)];
  // More distinct ids than any collection holds can never fit: answered before looking any of them up.
  if (wanted.length > COLLECTION_MAX_ASSETS) throw collectionFull(await tx.collections.memberCount(c.id), wanted.length);
  const assets = await tx.assets.findMany(caller.group_id, wanted);
  const missing = wanted.filter((a) => {
    const asset = assets.get(a);
    return !asset || !canRead(caller, asset) || asset.deletedAt;
  });
  if (missing.length > 0) {
    const details = missing.slice(0, 100).map((a) => ({ path: 'ids', message: `${a}: no such asset, or in the trash` }));
    throw new AppError('NOT_FOUND', 'ASSET_NOT_FOUND', `${missing.length} of the assets do not exist or are in the trash`, details);
  }
  await tx.collections.lockMemberships(wanted);
  const present = await tx.collections.memberCount(c.id);
  const fresh = await tx.collections.notMembers(c.id, wanted);
  if (present + fresh.length > COLLECTION_MAX_ASSETS) throw collectionFull(present, fresh.length);
  await tx.collections.addMembers(c.id, fresh);
  await publishMemberships(tx, c.groupId, fresh);
  return (await tx.collections.find(c.groupId, c.id, false, countedFor(caller))) as Collection;
}

/** Removes assets; ids that are not in it are ignored. */
export async function removeFromCollection(tx: Tx, caller: Principal, id: string, ids: string[]): Promise<Collection> {
  const c = await visibleCollection(tx, caller, id, true);
  // Only its members (at most 300) are locked, however long the list: one advisory lock per id would not be bounded.
  const asked = new Set(ids);
  const wanted = (await tx.collections.memberIds(c.id)).filter((a) => asked.has(a));
  await tx.collections.lockMemberships(wanted);
  const removed = await tx.collections.removeMembers(c.id, wanted);
  await publishMemberships(tx, c.groupId, removed);
  return (await tx.collections.find(c.groupId, c.id, false, countedFor(caller))) as Collection;
}

/** After a change of these assets' memberships (their locks held): each asset's whole list, for search. */
async function publishMemberships(tx: Tx, groupId: number, assetIds: string[]): Promise<void> {
  if (assetIds.length === 0) return;
  for (const m of await tx.collections.membershipsOf(assetIds)) await tx.events.writeMembership(groupId, m.assetId, m.collectionIds, m.version);
}

/** One page of a collection's assets the caller may read, trashed ones left out. */
export async function collectionPage(
  tx: Tx,
  caller: Principal,
  id: string,
  page: number,
  pageSize: number,
): Promise<{ collection: Collection; items: CollectionAssetView[]; total: number }> {
  const collection = await visibleCollection(tx, caller, id);
  const { items, total } = await tx.collections.pageAssets(collection.id, (page - 1) * pageSize, pageSize, countedFor(caller));
  return { collection, items, total };
}
