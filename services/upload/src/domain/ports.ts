import type { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import type { StoredFile } from '@dam/internal-api';

export type { StoredFile };

/**
 * What the use cases need from outside, implemented in adapters/ and wired in main.ts: metadata (registration and
 * what it knows), the pending-upload journal, the object store's multipart leftovers and other buckets, ffprobe.
 */

export interface CreatedAsset {
  id: string;
  status: string;
}

/** metadata, as upload asks it for a user (the calls of docs/internal-interfaces.md). */
export interface MetadataClient {
  /**
   * Registers stored originals as new assets. Throws RegistrationUnknown (upload.errors.ts) when no answer came:
   * metadata may have registered them.
   */
  createAssets(principal: Principal, files: StoredFile[], customMetadata: unknown): Promise<CreatedAsset[]>;
  /** Which of these ids (of the principal's group) have an asset record, deleted ones included. */
  existingAssets(principal: Principal, ids: string[]): Promise<string[]>;
  /** Which of these object keys are the current original of one of the assets `ids`. */
  liveKeys(principal: Principal, ids: string[], objectKeys: string[]): Promise<string[]>;
  /** Throws the error Replace would answer (404, 403) unless the principal may replace the asset's original. */
  checkReplaceable(principal: Principal, assetId: string): Promise<void>;
  /** As createAssets for one asset's new original (RegistrationUnknown alike). */
  replaceOriginal(principal: Principal, assetId: string, file: Omit<StoredFile, 'id'>, customMetadata: unknown): Promise<CreatedAsset>;
  /** Creates the asset of an ingest and its download job (or the asset in ERROR with `refused`). */
  startIngest(
    principal: Principal,
    req: { id: string; name: string; source: string; refused?: string },
  ): Promise<{ id: string; status: 'QUEUED' | 'ERROR'; message: string }>;
}

/** What the reaper needs to clean up after an upload whose process died (and to ask metadata about it). */
export interface PendingUpload {
  object_key: string;
  group_id: number;
  user_id: number;
  role_id: number;
  role_name: string;
  started_at: string;
}

export interface StalePending {
  id: string;
  upload: PendingUpload;
  revision: number;
}

/** Held by the request while its object is not yet registered; refreshes the entry so it never looks stale. */
export interface PendingHandle {
  /** The object was registered or removed: forget it. Never throws (a left entry is only reaped later). */
  close(): Promise<void>;
  /** Stops refreshing but keeps the entry, so the reaper takes over once it is stale. */
  abandon(): void;
}

/** The durable list of objects stored but not yet registered with metadata; it outlives the process that wrote it. */
export interface PendingJournal {
  /** Written before the first byte goes to S3; throws when it cannot be recorded (the upload must not start). */
  open(id: string, upload: PendingUpload): Promise<PendingHandle>;
  /** Entries not written for `olderThanMs`: their request is gone (a live one refreshes its entry). */
  stale(olderThanMs: number): Promise<StalePending[]>;
  /** Deletes the entry unless it was written again since `revision`; false when someone else did. */
  remove(id: string, revision: number): Promise<boolean>;
}

/** The asset bucket's objects as the orphan reaper removes them. */
export interface OrphanObjects {
  /** Aborts every incomplete multipart upload of exactly `key` (one already gone is no error). */
  abortIncompleteUploads(key: string): Promise<void>;
  /** Succeeds when the object is already gone. */
  remove(key: string): Promise<void>;
}

/** Objects of other buckets an ingest may read (INGEST_S3_BUCKETS). */
export interface SourceObjects {
  /** The object's size; throws ObjectNotFoundError (@dam/storage) when it does not exist. */
  size(bucket: string, key: string): Promise<number>;
  read(bucket: string, key: string): Promise<Readable>;
}

/** What an upload adds to a stored original's metadata beyond what its first bytes told (CONTRACT §14). */
export type StoredDescriber = (objectKey: string, contentType: string) => Promise<Record<string, unknown>>;
