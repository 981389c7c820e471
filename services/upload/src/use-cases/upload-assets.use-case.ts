import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import { unavailable, validationFailed } from '@dam/errors';
import { jsonProblem, receiveMultipart } from '@dam/http';
import type { Logger } from '@dam/logging';
import { originalKey, storeOriginal, type Storage } from '@dam/storage';
import { newAssetId } from '../domain/asset-id';
import type { MetadataClient, PendingHandle, PendingJournal, StoredDescriber, StoredFile } from '../domain/ports';
import { invalidCustomMetadata, noFile, RegistrationUnknown, requestBudget } from '../domain/upload.errors';

export interface UploadDeps {
  storage: Storage;
  metadata: MetadataClient;
  maxUploadBytes: number;
  logger: Logger;
  journal: PendingJournal;
  /** What the stored original says beyond its first bytes (a video's ffprobe metadata); none when absent. */
  describeStored?: StoredDescriber;
  /** No body byte for this long fails the upload with 408 (see receiveMultipart). */
  idleTimeoutMs?: number;
}

export interface UploadedFile {
  id: string;
  name: string;
  size: number;
  checksum: string;
  content_type: string;
  metadata: Record<string, unknown>;
  status: 'NOT_READY';
}

export interface UploadResult {
  files: UploadedFile[];
  success: true;
  provider: 'local';
}

export function parseCustomMetadata(value: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value) as unknown;
  } catch (error) {
    throw invalidCustomMetadata((error as Error).message);
  }
  // A NUL written as JSON's own escape (\u0000) arrives only now (PostgreSQL cannot store it), and so does the nesting.
  const problem = jsonProblem(parsed);
  if (problem) throw validationFailed([{ path: `custom_metadata.${problem.path}`, message: problem.message }]);
  return parsed;
}

/**
 * Endpoint 2: every file part becomes one asset. Originals stream to S3 while the body arrives; metadata
 * registers them all at once. A failure removes every object this request stored, so nothing is orphaned (unless
 * metadata may have registered them: see cleanUpFailed). Each object is in the pending journal until it is
 * registered or removed: if this process dies meanwhile, the orphan reaper (here or in another replica) removes it.
 */
export async function uploadAssets(deps: UploadDeps, principal: Principal, req: IncomingMessage): Promise<UploadResult> {
  const stored: string[] = [];
  const pending = new Map<string, PendingHandle>();
  const budget = requestBudget(deps.maxUploadBytes);
  let customMetadata: unknown;

  try {
    const { results } = await receiveMultipart<StoredFile>(req, {
      ...(deps.idleTimeoutMs ? { idleTimeoutMs: deps.idleTimeoutMs } : {}),
      onField(name, value) {
        if (name === 'custom_metadata') customMetadata = parseCustomMetadata(value);
      },
      onFile: (part) => storeNewOriginal(deps, principal, part.name, part.stream, budget, stored, pending),
    });
    if (results.length === 0) throw noFile();
    await deps.metadata.createAssets(principal, results, customMetadata);
    await Promise.all([...pending.values()].map((h) => h.close()));
    return { files: results.map(uploadedFile), success: true, provider: 'local' };
  } catch (error) {
    await cleanUpFailed(deps, error, stored, pending);
    throw error;
  }
}

/**
 * After a failed request: its objects are removed at once, unless metadata may have registered them although its
 * answer never came (RegistrationUnknown). Removing those would leave assets without their originals, processed
 * into ERROR while the client was told 503. Their journal entries stay instead: once stale, the reaper asks
 * metadata and removes only the objects of assets it does not have.
 */
export async function cleanUpFailed(deps: UploadDeps, error: unknown, keys: string[], pending: Map<string, PendingHandle>): Promise<void> {
  if (!(error instanceof RegistrationUnknown)) return removeAll(deps, keys, pending);
  deps.logger.warn({ object_keys: keys }, 'metadata may have registered the upload: its objects are left to the orphan reaper');
  for (const h of pending.values()) h.abandon();
}

/** What Upload Asset answers of one registered file. */
export const uploadedFile = (f: StoredFile): UploadedFile => ({
  id: f.id,
  name: f.name,
  size: f.size,
  checksum: f.checksum,
  content_type: f.content_type,
  metadata: f.metadata,
  status: 'NOT_READY',
});

/**
 * One file of a new asset: a new id, its pending-journal entry (recorded before the first byte, so a failure
 * halfway still knows what to remove: the key goes into `stored`, the entry into `pending`), the bytes streamed
 * to its original's key while checked (MD5, size within `budget`, type sniffed), and what the stored original
 * says. Shared by Upload Asset and the end of a resumable upload.
 */
export async function storeNewOriginal(
  deps: UploadDeps,
  principal: Principal,
  name: string,
  stream: Readable,
  budget: { take(bytes: number): void },
  stored: string[],
  pending: Map<string, PendingHandle>,
): Promise<StoredFile> {
  const id = newAssetId();
  const key = originalKey(String(principal.group_id), id);
  // The request may fail while the journal write below is pending, destroying this stream with the error:
  // nothing reads it yet, so without a listener that would be an unhandled 'error' event. storeOriginal
  // still sees the error when it starts reading.
  stream.on('error', () => undefined);
  const { group_id, user_id, role_id, role_name } = principal;
  const handle = await deps.journal
    .open(id, { object_key: key, group_id, user_id, role_id, role_name, started_at: new Date().toISOString() })
    .catch((error: unknown) => {
      deps.logger.error({ err: error }, 'could not record a pending upload');
      throw unavailable('The upload journal is unavailable', 'UPLOAD_JOURNAL_UNAVAILABLE');
    });
  pending.set(key, handle);
  stored.push(key);
  const original = await storeOriginal(deps.storage, key, stream, budget);
  return {
    id,
    name,
    size: original.size,
    checksum: original.checksum,
    content_type: original.contentType,
    object_key: key,
    metadata: { ...original.metadata, ...(await deps.describeStored?.(key, original.contentType)) },
  };
}

export async function removeAll(deps: UploadDeps, keys: string[], pending: Map<string, PendingHandle>): Promise<void> {
  const outcomes = await Promise.allSettled(keys.map((key) => deps.storage.remove(key)));
  await Promise.all(
    outcomes.map((o, i) => {
      const key = keys[i] as string;
      // The journal entry stays, so the reaper retries the removal once the grace period has passed.
      if (o.status === 'fulfilled') return pending.get(key)?.close();
      deps.logger.error({ err: o.reason, object_key: key }, 'could not remove the object of a failed upload');
      pending.get(key)?.abandon();
      return undefined;
    }),
  );
}
