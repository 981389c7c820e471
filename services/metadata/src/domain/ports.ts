import type { Principal } from '@dam/auth-tokens';
import type { AssetEventType, DeletionPayload } from '@dam/events';
import type { TransformParams } from '@dam/internal-api';
import type { AssetSchema } from './asset-schema';
import type { Collection, CollectionAssetView } from './collection';
import type { Asset, NewAsset, StoredConversion } from './asset';
import type { Job, JobStatus, JobType, NewJob } from './job';

/** Asset persistence inside one transaction; every method is scoped by group id (the tenant key). */
export interface AssetStore {
  insert(asset: NewAsset): Promise<Asset>;
  /** Without a lock (a row another transaction holds can still be read). */
  findById(groupId: number, id: string): Promise<Asset | undefined>;
  /** Locks the row for the rest of the transaction. */
  findForUpdate(groupId: number, id: string): Promise<Asset | undefined>;
  /** An addon's result kept with the asset, the addon marked available; the asset as changed. */
  /** Stores addon results (`addon`'s, and any it brings up to date) and marks `addon` available. */
  saveAddonResult(groupId: number, id: string, addon: string, results: Record<string, Record<string, unknown>>): Promise<Asset | undefined>;
  /** Delete of addon keys: `addons` out of `addons_info`, the addon results replaced by `results`; the asset as changed. */
  removeAddonResults(groupId: number, id: string, addons: readonly string[], results: Record<string, Record<string, unknown>>): Promise<Asset>;
  /** The group's assets among `ids` (trashed ones too), by id. */
  findMany(groupId: number, ids: string[]): Promise<Map<string, Asset>>;
  saveConversions(
    groupId: number,
    id: string,
    conversions: Record<string, StoredConversion>,
    metadata: Record<string, unknown>,
    addonsInfo?: Record<string, { available: boolean }>,
  ): Promise<void>;
  /** What failed in a NOT_READY asset's processing round, added to its `errors` (shown once it is ERROR). */
  noteFailure(groupId: number, id: string, errors: Record<string, string>): Promise<void>;
  /**
   * The end of a processing round, one conditional update: a NOT_READY asset none of whose round's jobs (processing,
   * ingest, addon) is open becomes ERROR when failures were noted, else OK; undefined when it does not move.
   */
  settle(groupId: number, id: string): Promise<Asset | undefined>;
  /** Automatic addons whose model is not available: `addons_info.<addon>.available` false; the asset as changed. */
  markAddonsUnavailable(groupId: number, id: string, addons: readonly string[]): Promise<Asset>;
  /** Replaces the conversions of a live asset; returns it as it now is. */
  setConversions(groupId: number, id: string, conversions: Record<string, StoredConversion>): Promise<Asset>;
  /** Into the trash (conversions gone); undefined when it already was. */
  moveToTrash(groupId: number, id: string): Promise<Asset | undefined>;
  /** Out of the trash; undefined when it was not in it. */
  restore(groupId: number, id: string): Promise<Asset | undefined>;
  /** For good: the row goes (its bytes are queued for deletion by the caller). */
  remove(groupId: number, id: string): Promise<void>;
  /** Trashed assets of the group, trashed before `before`, locked (other purges skip them). */
  lockTrashed(groupId: number, before: Date, limit: number): Promise<Asset[]>;
  /** Live assets uploaded in [from, to], oldest first (only `creatorId`'s when given), and how many match. */
  uploadedBetween(groupId: number, from: Date, to: Date, limit: number, creatorId?: number): Promise<{ ids: string[]; total: number }>;
  /** New custom data (and its schema). */
  setData(groupId: number, id: string, data: Record<string, unknown>, dataSchemaId: number): Promise<Asset>;
  /** Locks the row unless another transaction holds it (then undefined is `busy`). */
  findForUpdateNoWait(groupId: number, id: string): Promise<Asset | undefined | 'busy'>;
  /** The anonymous URLs of its public keys (`urls.public`). */
  setPublicUrls(groupId: number, id: string, publicUrls: Record<string, string>): Promise<Asset>;
  /** A new original: its fields, no conversions, no public keys, NOT_READY again. */
  replaceOriginal(groupId: number, id: string, original: NewOriginal): Promise<Asset>;
}

export interface NewOriginal {
  name: string;
  size: number;
  checksum: string;
  contentType: string;
  objectKey: string;
  metadata: Record<string, unknown>;
  data: Record<string, unknown>;
  dataSchemaId: number;
}

export interface AssetReader {
  findById(groupId: number, id: string): Promise<Asset | undefined>;
  /** The group's assets among `ids` (deleted ones included), in one read; ids without a record are left out. */
  findManyById(groupId: number, ids: readonly string[]): Promise<Asset[]>;
  /** Live assets of the group whose `phash` is within `maxDistance` bits of `phash`, nearest first. */
  similar(
    groupId: number,
    exceptId: string,
    phash: string,
    maxDistance: number,
    limit: number,
    creatorId?: number,
  ): Promise<Array<{ id: string; distance: number }>>;
}

/**
 * Writes into the outbox of the current transaction (relayed later): asset events (ASSET_EVENTS), and the state
 * messages of schemas (DATA_SCHEMAS) and collections (COLLECTIONS), and purges (ASSET_PURGES), that the search
 * read model follows.
 */
export interface AssetEventWriter {
  write(type: Extract<AssetEventType, 'file-saved' | 'file-processed' | 'file-data-updated' | 'addon-processed'>, asset: Asset): Promise<void>;
  /**
   * `file-deleted` / `file-undeleted` with the spec's deletion payload. A `file-deleted` whose Delete queued the
   * removal of `removing` is held until they are settled, its status then telling the outcome (OK, MAYBE, ERROR).
   */
  writeDeletion(asset: Asset, payload: DeletionPayload, removing?: readonly RemovedObject[]): Promise<void>;
  /** A schema created or updated (its searchable fields, for the search read model). */
  writeSchemaSaved(schema: AssetSchema): Promise<void>;
  /** Every collection an asset is in, after a change of them. */
  writeMembership(groupId: number, assetId: string, collectionIds: string[], version: number): Promise<void>;
  /** Who sees a collection (owner, shared), or that it is gone. */
  writeCollectionState(collection: Collection, deleted: boolean): Promise<void>;
  /** Assets purged from the trash, each with a version above all its events (ASSET_PURGES). */
  writePurge(groupId: number, assets: Array<{ id: string; version: number }>): Promise<void>;
}

/** Collections of a group and their assets (CONTRACT §9). */
export interface CollectionStore {
  create(c: Pick<Collection, 'id' | 'groupId' | 'ownerId' | 'name' | 'shared'>): Promise<Collection>;
  /** The user's SELECTED_ASSETS; undefined when another transaction made it first. */
  createBasket(c: Pick<Collection, 'id' | 'groupId' | 'ownerId' | 'name'>): Promise<Collection | undefined>;
  /** A `creatorId` counts only the members that user created in `assetCount` (a caller who reads its own only). */
  findBasket(groupId: number, ownerId: number, creatorId?: number): Promise<Collection | undefined>;
  /** With `lock`, the row stays locked to the end of the transaction (changes of one collection in turn). */
  find(groupId: number, id: string, lock?: boolean, creatorId?: number): Promise<Collection | undefined>;
  /** The user's own collections and the group's shared ones, oldest first (the basket first of all). */
  listVisible(groupId: number, userId: number, offset: number, limit: number, creatorId?: number): Promise<{ items: Collection[]; total: number }>;
  update(groupId: number, id: string, change: { name?: string; shared?: boolean }, creatorId?: number): Promise<Collection | undefined>;
  delete(groupId: number, id: string): Promise<void>;
  memberIds(id: string): Promise<string[]>;
  memberCount(id: string): Promise<number>;
  /** Those of `assetIds` that are not in the collection yet. */
  notMembers(id: string, assetIds: string[]): Promise<string[]>;
  addMembers(id: string, assetIds: string[]): Promise<void>;
  /** Removes those that are members; returns them. */
  removeMembers(id: string, assetIds: string[]): Promise<string[]>;
  /** Holds each asset's membership lock to the end of the transaction (taken in id order: no deadlock). */
  lockMemberships(assetIds: string[]): Promise<void>;
  /** Each asset's collections now, with a new version for its message. */
  membershipsOf(assetIds: string[]): Promise<Array<{ assetId: string; collectionIds: string[]; version: number }>>;
  /** Its assets not in the trash (only `creatorId`'s when given), in the order they were added. */
  pageAssets(id: string, offset: number, limit: number, creatorId?: number): Promise<{ items: CollectionAssetView[]; total: number }>;
}

/** Asset schemas of a group (schema 0 is built in, never stored). */
export interface SchemaStore {
  create(groupId: number, s: Pick<AssetSchema, 'name' | 'schema' | 'serviceProperties'>): Promise<AssetSchema>;
  update(groupId: number, id: number, s: Pick<AssetSchema, 'name' | 'schema' | 'serviceProperties'>): Promise<AssetSchema | undefined>;
  find(groupId: number, id: number): Promise<AssetSchema | undefined>;
  /** Stored schemas in id order, from `offset`, at most `limit`; `total` counts them all. */
  list(groupId: number, offset: number, limit: number): Promise<{ items: AssetSchema[]; total: number }>;
}

/** A queued Update Data request. */
export interface QueuedDataUpdate {
  id: number;
  groupId: number;
  assetId: string;
  principal: Principal;
  body: unknown;
}

/** Update Data requests waiting for their turn, in arrival order per asset. */
export interface DataUpdateQueue {
  enqueue(groupId: number, assetId: string, principal: Principal, body: unknown): Promise<number>;
  /** Whether requests for the asset are waiting (a new one must queue behind them). */
  pending(groupId: number, assetId: string): Promise<boolean>;
  /** The oldest waiting request of an asset no one else is applying now, locked; undefined when none. */
  claimNext(): Promise<QueuedDataUpdate | undefined>;
  remove(id: number): Promise<void>;
}

/** What a public key copies: one object, or a multi-file conversion's folder (`/` at the end), and the file its URL names. */
export interface PublicSource {
  key: string;
  source: string;
  /** The file's name in the copy (a folder's descriptor: its path in the folder). */
  entry: string;
}

/** The asset keys published as copies under the public prefix (migration 020). */
export interface PublicObjects {
  /** Records the keys' copies, made after the commit; a key public already keeps its copy. Returns each one's object key. */
  add(groupId: number, assetId: string, entries: readonly PublicSource[]): Promise<Array<{ key: string; objectKey: string }>>;
  /** Those of the keys that are public were written again (same or new source): their copies are made again. */
  refresh(groupId: number, assetId: string, entries: readonly PublicSource[]): Promise<Array<{ key: string; objectKey: string }>>;
  /** Revokes the asset's public keys (those of `keys`, or all of them): their copies are queued for removal. */
  revoke(groupId: number, assetId: string, keys?: readonly string[]): Promise<void>;
}

/** Object-store keys whose bytes must go, carried out after the commit (migration 010). */
/** An object (or prefix) a Delete queued for removal, and the Delete's key it belongs to (`original`, `thumb`...). */
export interface RemovedObject {
  key: string;
  label: string;
}

export interface ObjectDeletions {
  /** Keys, or prefixes ending in `/` (everything under them); not before `delayMs` from now. */
  enqueue(keys: readonly string[], delayMs?: number): Promise<void>;
  /**
   * Drops queued deletions under the prefix (waiting for one in flight): its objects are live again. A
   * `file-deleted` held for them goes out now if nothing else holds it (MAYBE: the files were kept, `reason`).
   */
  cancelUnder(prefix: string, reason?: string): Promise<void>;
  /** Sends every `file-deleted` held for the asset now, MAYBE with `reason` for removals still pending. */
  releaseHeld(assetId: string, reason: string): Promise<void>;
}

export interface ProcessedMessages {
  /** Records the id; false when it was recorded before (a duplicate delivery). */
  claim(messageId: string): Promise<boolean>;
}

export interface JobOutcome {
  status: 'COMPLETED' | 'ERROR';
  error?: string;
  /** Outputs not made because they do not apply to the original, with why. */
  skipped?: Record<string, string>;
  /** When the worker took the job (its final report says), for the steps it never reported started. */
  startedAt?: string;
}

/** A worker's sign of life: who, how far, in which step. */
export interface JobRenewal {
  worker: string;
  progress: number;
  step: string;
  /** When the worker took the job (its report says): the start of the steps it never reported started. */
  startedAt?: string;
}

/** Jobs, written in the transaction of the asset change that asks for them. */
export interface JobStore {
  create(job: NewJob): Promise<Job>;
  /** IN_PROGRESS with a fresh lease for `worker`, unless another holder's lease still runs or the job ended. */
  renew(groupId: number, jobId: number, renewal: JobRenewal): Promise<boolean>;
  findForUpdate(groupId: number, jobId: number): Promise<Job | undefined>;
  /** Ends an open job (its open steps with it); false when it had already ended. */
  finish(groupId: number, jobId: number, outcome: JobOutcome): Promise<boolean>;
  /** Ends the open jobs of this type for the asset; returns how many it ended. */
  finishOpen(groupId: number, assetId: string, type: JobType, outcome: JobOutcome): Promise<number>;
  /** Open worker jobs whose lease ran out, locked for this transaction (other sweepers skip them). */
  claimExpired(limit: number): Promise<Job[]>;
  /** Counts one more hand-out and gives it a fresh deadline; returns the new attempt number. */
  handOutAgain(groupId: number, jobId: number): Promise<number>;
  /** Takes the oldest job metadata runs itself (queued, or its runner's lease ran out) for `owner`. */
  claimLocal(owner: string): Promise<Job | undefined>;
  /** Progress (capped at 99 until the job ends) and lease renewal of a running job; may add asset ids. */
  advance(groupId: number, jobId: number, progress: number, addAssetIds?: readonly string[]): Promise<void>;
}

/** Commands to workers, through the outbox of the current transaction. */
export interface JobCommandWriter {
  /** `asset` undefined: a job about no single asset (a reissue of callbacks). */
  send(job: Job, asset: Asset | undefined, attempt: number): Promise<void>;
}

export interface JobFilter {
  status?: JobStatus;
  type?: JobType;
  /** Only the jobs this user created (a CREATOR reads only its own). */
  createdBy?: number;
  page: number;
  pageSize: number;
}

export interface JobReader {
  findJob(groupId: number, id: number): Promise<Job | undefined>;
  listJobs(groupId: number, filter: JobFilter): Promise<{ items: Job[]; total: number }>;
}

export interface Tx {
  assets: AssetStore;
  jobs: JobStore;
  commands: JobCommandWriter;
  deletions: ObjectDeletions;
  publicObjects: PublicObjects;
  schemas: SchemaStore;
  collections: CollectionStore;
  dataUpdates: DataUpdateQueue;
  events: AssetEventWriter;
  messages: ProcessedMessages;
}

export type RunInTransaction = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;

/** conversion's on-demand transform: makes `cache_key` from `source_key` unless it exists (adapters/transform.client.ts). */
export type TransformCall = (req: {
  source_key: string;
  cache_key: string;
  params: TransformParams;
}) => Promise<{ object_key: string; content_type: string; size: number }>;

/** The object store as the transform variants are looked up in it: null when the object does not exist. */
export interface ObjectStat {
  stat(key: string): Promise<{ size: number; etag: string } | null>;
}
