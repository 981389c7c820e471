/** A collection of assets (CONTRACT §9). */
export interface Collection {
  id: string;
  groupId: number;
  ownerId: number;
  name: string;
  shared: boolean;
  /** The owner's SELECTED_ASSETS: never renamed, shared or deleted. */
  basket: boolean;
  /** Its assets that are not in the trash. */
  assetCount: number;
  createdAt: Date;
}

export interface CollectionView {
  collection_id: string;
  name: string;
  shared: boolean;
  owner_id: number;
  asset_count: number;
  created_at: string;
}

/** The most assets a collection holds (the specification's limit); trashed members count, undelete restores them. */
export const COLLECTION_MAX_ASSETS = 300;
export const BASKET_NAME = 'SELECTED_ASSETS';

export const toCollectionView = (c: Collection): CollectionView => ({
  collection_id: c.id,
  name: c.name,
  shared: c.shared,
  owner_id: c.ownerId,
  asset_count: c.assetCount,
  created_at: c.createdAt.toISOString(),
});

/** One asset of a collection's page. */
export interface CollectionAssetView {
  id: string;
  name: string;
  size: number;
  content_type: string;
  status: string;
  upload_time: string;
}
