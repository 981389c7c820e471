import type { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import { HostRateLimiter, openGuardedDownload, OutboundError, outboundUrlProblem } from '@dam/http';
import { isNotFoundError, originalKey, storeOriginal, type StoredOriginal, type Storage } from '@dam/storage';
import type { MetadataClient } from '../adapters/metadata.client';
import { newAssetId } from './asset-id';

export interface IngestConfig {
  /** Hosts the outbound guard lets through (plain http too): INGEST_ALLOW_HOSTS. */
  allowHosts: readonly string[];
  /** Buckets `s3://` may read (never the suite's own): INGEST_S3_BUCKETS. */
  s3Buckets: readonly string[];
  maxBytes: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  rateLimiter: HostRateLimiter;
}

/** An ingest that cannot be done; its message is the asset's `errors.original`. */
export class IngestFailure extends Error {}

/** An ingest that may not run now (its group downloads too much from the host): to be tried again after `retryAfterMs`. */
export class IngestDeferred extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = 'IngestDeferred';
  }
}

export type IngestSource = { kind: 's3'; bucket: string; key: string } | { kind: 'url'; url: string };

/** `s3://bucket/key` or an http(s) URL; anything else, or a source the rules refuse, is a reason to refuse it. */
export function parseSource(source: string, ownBucket: string, cfg: Pick<IngestConfig, 'allowHosts' | 's3Buckets'>): IngestSource | { refused: string } {
  if (source.startsWith('s3://')) {
    const rest = source.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const key = slash < 0 ? '' : rest.slice(slash + 1);
    if (!bucket || !key) return { refused: 'refused: an s3 URI must be s3://<bucket>/<key>' };
    // The asset bucket holds every group's originals: reading it by URI would cross tenants.
    if (bucket === ownBucket) return { refused: `refused: the bucket ${bucket} is the service's own and is never read by URI` };
    if (!cfg.s3Buckets.includes(bucket)) return { refused: `refused: the bucket ${bucket} is not one the service may read (INGEST_S3_BUCKETS)` };
    return { kind: 's3', bucket, key };
  }
  const problem = outboundUrlProblem(source, cfg.allowHosts);
  if (problem) return { refused: `refused: the key ${problem}` };
  return { kind: 'url', url: source };
}

/** Endpoint 3, the request: checks what can be checked now, then metadata creates the asset and its job. */
export async function requestIngest(
  deps: { metadata: MetadataClient; ownBucket: string; ingest: Pick<IngestConfig, 'allowHosts' | 's3Buckets'> },
  principal: Principal,
  body: { name: string; key: string },
) {
  const parsed = parseSource(body.key, deps.ownBucket, deps.ingest);
  return deps.metadata.startIngest(principal, {
    id: newAssetId(),
    name: body.name,
    source: body.key,
    ...('refused' in parsed ? { refused: parsed.refused } : {}),
  });
}

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
    const stat = await storage.client.statObject(parsed.bucket, parsed.key).catch((error: unknown) => {
      if (isNotFoundError(error)) throw new IngestFailure(`s3://${parsed.bucket}/${parsed.key} does not exist`);
      throw new IngestFailure(`s3://${parsed.bucket}/${parsed.key} cannot be read: ${(error as Error).message}`);
    });
    if (stat.size > cfg.maxBytes) throw new IngestFailure(`the file is ${stat.size} bytes, larger than ${cfg.maxBytes}`);
    total = stat.size;
    body = await storage.client.getObject(parsed.bucket, parsed.key);
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
