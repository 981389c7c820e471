import type { Principal } from '@dam/auth-tokens';
import type { PendingHandle } from '../domain/ports';
import { cleanUpFailed, storeNewOriginal, uploadedFile, type UploadDeps, type UploadedFile } from './upload-assets.use-case';

/** A finished resumable upload as the tus store holds it. */
export interface FinishedUpload {
  /** The store's object with every byte. */
  key: string;
  name: string;
  /** Upload Asset's `custom_metadata`, already parsed. */
  customMetadata: unknown;
}

/**
 * The last byte of a resumable upload has arrived (CONTRACT §12): the asset is made exactly as Upload Asset makes
 * it: its original streamed from the finished upload through the same checks (MD5, size, type sniffing, what the
 * stored original says), registered with metadata (same statuses and events). The upload's own objects are the
 * caller's to remove afterwards; on failure, this cleans up what it stored, as Upload Asset does.
 */
export async function finishResumableUpload(deps: UploadDeps, principal: Principal, upload: FinishedUpload): Promise<UploadedFile> {
  const stored: string[] = [];
  const pending = new Map<string, PendingHandle>();
  const budget = { take: () => undefined }; // the tus server held the upload to its declared length and the cap
  try {
    const file = await storeNewOriginal(deps, principal, upload.name, await deps.storage.getStream(upload.key), budget, stored, pending);
    await deps.metadata.createAssets(principal, [file], upload.customMetadata);
    await Promise.all([...pending.values()].map((h) => h.close()));
    return uploadedFile(file);
  } catch (error) {
    await cleanUpFailed(deps, error, stored, pending);
    throw error;
  }
}
