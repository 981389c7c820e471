import type { AssetEventType } from '@dam/events';
import type { Asset, NewAsset, StoredConversion } from './asset';

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

export interface Tx {
  assets: AssetStore;
  events: AssetEventWriter;
  messages: ProcessedMessages;
}

export type RunInTransaction = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
