import { HostRateLimiter, outboundUrlProblem } from '@dam/http';
import type { SourceObjects } from './ports';

export interface IngestConfig {
  /** Hosts the outbound guard lets through (plain http too): INGEST_ALLOW_HOSTS. */
  allowHosts: readonly string[];
  /** Buckets `s3://` may read (never the suite's own): INGEST_S3_BUCKETS. */
  s3Buckets: readonly string[];
  /** How those buckets are read; without it every `s3://` source is refused. */
  s3Sources?: SourceObjects;
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
