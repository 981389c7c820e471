import type { Readable } from 'node:stream';
import { openGuardedDownload, OutboundError } from '@dam/http';
import { ObjectNotFoundError, originalKey, storeOriginal, type StoredOriginal, type Storage } from '@dam/storage';
import { IngestDeferred, IngestFailure, parseSource, type IngestConfig } from '../domain/ingest';

/**
 * The download of one ingest job: the source streams into the asset's original key exactly as an upload does
 * (MD5, size and type on the fly, at most `maxBytes`). Failures the source causes throw `IngestFailure` (the job
 * fails at once); the group over its rate for the host throws `IngestDeferred` (tried again later); others
 * (storage down) throw as they are, to be retried.
 */
export async function downloadOriginal(
  storage: Storage,
  cfg: IngestConfig,
  ownBucket: string,
  target: { groupId: string; assetId: string; source: string },
  progress: (done: number, total: number) => void,
): Promise<StoredOriginal & { objectKey: string }> {
  const parsed = parseSource(target.source, ownBucket, cfg);
  if ('refused' in parsed) throw new IngestFailure(parsed.refused);
  let body: Readable;
  let total: number | undefined;
  if (parsed.kind === 's3') {
    const sources = cfg.s3Sources;
    if (!sources) throw new IngestFailure(`refused: the bucket ${parsed.bucket} cannot be read here`);
    const uri = `s3://${parsed.bucket}/${parsed.key}`;
    const size = await sources.size(parsed.bucket, parsed.key).catch((error: unknown) => {
      if (error instanceof ObjectNotFoundError) throw new IngestFailure(`${uri} does not exist`);
      throw new IngestFailure(`${uri} cannot be read: ${(error as Error).message}`);
    });
    if (size > cfg.maxBytes) throw new IngestFailure(`the file is ${size} bytes, larger than ${cfg.maxBytes}`);
    total = size;
    body = await sources.read(parsed.bucket, parsed.key);
  } else {
    // Each group has its own rate per host: one tenant's burst does not refuse another's downloads.
    const download = await openGuardedDownload(parsed.url, { ...cfg, rateScope: target.groupId }).catch((error: unknown) => {
      if (error instanceof OutboundError && error.code === 'RATE_LIMITED') throw new IngestDeferred(error.message, error.retryAfterMs ?? 1000);
      throw error instanceof OutboundError ? new IngestFailure(error.message) : error;
    });
    body = download.body;
    total = download.contentLength;
  }
  const objectKey = originalKey(target.groupId, target.assetId);
  let seen = 0;
  try {
    const stored = await storeOriginal(storage, objectKey, body, {
      take(bytes) {
        seen += bytes;
        if (seen > cfg.maxBytes) throw new IngestFailure(`the file is larger than ${cfg.maxBytes} bytes`);
        if (total) progress(seen, total);
      },
    });
    return { ...stored, objectKey };
  } catch (error) {
    // A stream cut short may have left a truncated object: nothing of a failed download stays.
    await storage.remove(objectKey).catch(() => undefined);
    if (error instanceof OutboundError) throw new IngestFailure(error.message);
    throw error;
  }
}
