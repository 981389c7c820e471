import type { IncomingMessage } from 'node:http';
import type { Principal } from '@dam/auth-tokens';
import type { Logger } from '@dam/logging';
import { originalKey, type Storage } from '@dam/storage';
import type { MetadataClient, RegisteredFile } from '../adapters/metadata.client';
import { receiveMultipart } from '../adapters/multipart.receiver';
import { storeOriginal, type ByteBudget } from '../adapters/original.writer';
import { newAssetId } from './asset-id';
import { invalidCustomMetadata, noFile, uploadTooLarge } from './upload.errors';

export interface UploadDeps {
  storage: Storage;
  metadata: MetadataClient;
  maxUploadBytes: number;
  logger: Logger;
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

function parseCustomMetadata(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw invalidCustomMetadata((error as Error).message);
  }
}

/**
 * Endpoint 2: every file part becomes one asset. Originals stream to S3 while the body arrives; metadata
 * registers them all at once. Any failure removes every object this request stored, so nothing is orphaned.
 */
export async function uploadAssets(deps: UploadDeps, principal: Principal, req: IncomingMessage): Promise<UploadResult> {
  const stored: string[] = [];
  let total = 0;
  const budget: ByteBudget = {
    take(bytes) {
      total += bytes;
      if (total > deps.maxUploadBytes) throw uploadTooLarge(deps.maxUploadBytes);
    },
  };
  let customMetadata: unknown;

  try {
    const { results } = await receiveMultipart<RegisteredFile>(req, {
      onField(name, value) {
        if (name === 'custom_metadata') customMetadata = parseCustomMetadata(value);
      },
      async onFile(part) {
        const id = newAssetId();
        const key = originalKey(String(principal.group_id), id);
        // Recorded before the first byte: a failure halfway still knows what to remove.
        stored.push(key);
        const original = await storeOriginal(deps.storage, key, part.stream, budget);
        return {
          id,
          name: part.name,
          size: original.size,
          checksum: original.checksum,
          content_type: original.contentType,
          object_key: key,
          metadata: original.metadata,
        };
      },
    });
    if (results.length === 0) throw noFile();
    await deps.metadata.createAssets(principal, results, customMetadata);
    return {
      files: results.map((f) => ({
        id: f.id,
        name: f.name,
        size: f.size,
        checksum: f.checksum,
        content_type: f.content_type,
        metadata: f.metadata,
        status: 'NOT_READY',
      })),
      success: true,
      provider: 'local',
    };
  } catch (error) {
    await removeAll(deps, stored);
    throw error;
  }
}

async function removeAll(deps: UploadDeps, keys: string[]): Promise<void> {
  const outcomes = await Promise.allSettled(keys.map((key) => deps.storage.remove(key)));
  outcomes.forEach((o, i) => {
    // Left for an operator sweep of originals/ without an asset record; logged so it can be found.
    if (o.status === 'rejected') deps.logger.error({ err: o.reason, object_key: keys[i] }, 'could not remove the object of a failed upload');
  });
}
