import type { AssetEventType } from '@dam/events';
import type { Asset, NewAsset, StoredConversion } from './asset';
import type { Job, JobStatus, JobType, NewJob } from './job';

/** Asset persistence inside one transaction; every method is scoped by group id (the tenant key). */
export interface AssetStore {
  insert(asset: NewAsset): Promise<Asset>;
  /** Locks the row for the rest of the transaction. */
  findForUpdate(groupId: number, id: string): Promise<Asset | undefined>;
  saveConversions(
    groupId: number,
    id: string,
    conversions: Record<string, StoredConversion>,
    metadata: Record<string, unknown>,
  ): Promise<void>;
  /** Conditional claim: only a NOT_READY asset moves, so a repeated report changes nothing. */
  markProcessed(groupId: number, id: string): Promise<Asset | undefined>;
  markFailed(groupId: number, id: string, errors: Record<string, string>): Promise<Asset | undefined>;
}

export interface AssetReader {
  findById(groupId: number, id: string): Promise<Asset | undefined>;
}

/** Writes an asset event into the outbox of the current transaction (relayed to ASSET_EVENTS later). */
export interface AssetEventWriter {
  write(type: Extract<AssetEventType, 'file-saved' | 'file-processed'>, asset: Asset): Promise<void>;
}

export interface ProcessedMessages {
  /** Records the id; false when it was recorded before (a duplicate delivery). */
  claim(messageId: string): Promise<boolean>;
}

/** Jobs, written in the transaction of the asset change that asks for them. */
export interface JobStore {
  create(job: NewJob): Promise<Job>;
  /** Ends the open job of this type for the asset (its open steps with it); returns how many it ended. */
  finishOpen(groupId: number, assetId: string, type: JobType, outcome: { status: 'COMPLETED' | 'ERROR'; error?: string }): Promise<number>;
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
  events: AssetEventWriter;
  messages: ProcessedMessages;
}

export type RunInTransaction = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
