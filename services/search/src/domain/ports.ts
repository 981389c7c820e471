import type { AssetData } from '@dam/events';
import type { Facets, IndexedAsset, ResultSet, Scope, SearchRequest, SetPage } from './search-request';

/** What the asset's addons found (the envelope's `addon_terms`). */
export interface AddonTerms {
  labels: string[];
  words: string[];
}

/** A collection's visibility as COLLECTIONS carries it. */
export interface CollectionState {
  group_id: number;
  collection_id: string;
  owner_id: number;
  shared: boolean;
  deleted: boolean;
}

/**
 * Writes of the read model. Every write carries the event's asset version and changes the row only when that
 * version is newer than the row's; each answers whether it changed anything.
 */
export interface ReadModel {
  upsertAsset(groupId: number, version: number, asset: AssetData, dataSchemaId?: number, terms?: AddonTerms): Promise<boolean>;
  setDeleted(groupId: number, assetId: string, version: number, deleted: boolean): Promise<boolean>;
  saveSchema(groupId: number, schemaId: number, serviceProperties: Record<string, unknown>, updatedAt: string): Promise<boolean>;
  setMemberships(groupId: number, assetId: string, collectionIds: string[], version: number): Promise<boolean>;
  setPurged(groupId: number, assetId: string, version: number): Promise<boolean>;
  saveCollection(c: CollectionState): Promise<void>;
}

/** The read model as a replay needs it: emptied, and one replay at a time across every replica. */
export interface RebuildableReadModel extends ReadModel {
  /** Runs `fn` holding the lock `name`; refused at once while another holds it. */
  exclusively<T>(name: string, fn: () => Promise<T>): Promise<T>;
  clear(): Promise<void>;
}

/** A match stored as a result set where it was made: what the first page needs of it. */
export interface SavedMatch {
  /** The ids and scores of the set's first `page_size` entries, in its order. */
  firstIds: string[];
  firstScores: number[];
  /** How many ids the set holds (at most the cap), and whether the match had more. */
  total: number;
  capped: boolean;
  facets: Facets;
  /**
   * The indexed assets among `firstIds` when the store read them with the set (the same statement, so the same
   * snapshot); otherwise the first page asks `assets(firstIds)`.
   */
  firstAssets?: IndexedAsset[];
}

/** Queries of the read model. */
export interface SearchIndex {
  /** The best `limit` matches of a request in its order, and the facets it asks for over the whole match. */
  match(request: SearchRequest, scope: Scope, limit: number): Promise<{ hits: Array<{ id: string; score: number }>; facets: Facets }>;
  /**
   * Optional: the best `cap` matches stored as result set `set.id` for `owner` by the store that holds both (one
   * statement in the database), so up to 10,000 ids never travel to the service and back: the same set as `match`
   * then `ResultSets.save`, with `set.facets` ignored (the facets asked are counted and stored here).
   */
  matchAndSave?(
    request: SearchRequest,
    scope: Scope,
    cap: number,
    set: Pick<ResultSet, 'id' | 'page_size' | 'extended'>,
    owner: SetOwner,
    ttlMs: number,
  ): Promise<SavedMatch>;
  /** The indexed assets among `ids` (purged ones are missing), in no particular order. */
  assets(ids: string[]): Promise<IndexedAsset[]>;
}

/** Whose result set: only its maker reads it again. */
export interface SetOwner {
  groupId: number;
  userId: number;
}

/** Stored result sets, each until its time to live passes. */
export interface ResultSets {
  save(set: ResultSet, owner: SetOwner, ttlMs: number): Promise<void>;
  /** The owner's set unless it expired. */
  find(id: string, owner: SetOwner): Promise<ResultSet | undefined>;
  /** Page `page` of the owner's set unless it expired (no ids past its last page): only that page's ids leave the store. */
  findPage(id: string, owner: SetOwner, page: number): Promise<SetPage | undefined>;
  /** Removes expired sets; answers how many. */
  deleteExpired(): Promise<number>;
}

/**
 * Every message of a stream up to the last one it holds when called, in order, each given to `apply` (which says
 * whether it changed the model); answers how many were read and applied.
 */
export interface StreamReplay {
  readAll(stream: string, filter: string, apply: (subject: string, body: unknown) => Promise<boolean>): Promise<{ read: number; applied: number }>;
}
