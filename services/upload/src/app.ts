import type { Express, RequestHandler } from 'express';
import { callerKey, principalOf } from '@dam/auth-tokens';
import { createEdgeLimits, createHttpApp, finishApp, type EdgeLimitOptions, type IdempotencyStore, type ReadinessCheck, type TrustProxy } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { MetadataClient } from './adapters/metadata.client';
import type { PendingJournal } from './adapters/pending-upload.journal';
import type { StoredDescriber } from './adapters/video-describer';
import { ingestRoutes, uploadRoutes } from './http/upload.routes';

export interface UploadAppDeps {
  logger: Logger;
  storage: Storage;
  metadata: MetadataClient;
  journal: PendingJournal;
  authenticate: RequestHandler;
  maxUploadBytes: number;
  readiness?: ReadinessCheck;
  /** Per address before credentials, failed authentications per address, per principal (as on the gateway). */
  limits?: EdgeLimitOptions;
  /** No body byte for this long fails an upload with 408 (0: never). */
  idleTimeoutMs?: number;
  /** Uploads at once per user or API key; 429 beyond (0: no cap). */
  maxConcurrentPerPrincipal?: number;
  /** Ingest from URI: the outbound rules, and the asset bucket (never read by URI). */
  ingest?: { allowHosts: readonly string[]; s3Buckets: readonly string[] };
  /** Proxies whose X-Forwarded-For decides `req.ip` (the per-address buckets). Defaults to env TRUST_PROXY (none). */
  trustProxy?: TrustProxy;
  /** Reads a stored video's metadata (ffprobe); without it, videos get theirs from the transcode job. */
  describeStored?: StoredDescriber;
  /** Idempotency-Key (CONTRACT §13): kept responses, shared with every replica; without it, in this process only. */
  idempotency?: IdempotencyStore;
}

/** Builds the HTTP app from its dependencies; never listens (main.ts and tests do). */
export function buildUploadApp(deps: UploadAppDeps): Express {
  const app = createHttpApp({
    logger: deps.logger,
    readiness: deps.readiness,
    ...(deps.trustProxy !== undefined ? { trustProxy: deps.trustProxy } : {}),
  });
  const limits = createEdgeLimits(deps.limits ?? {});
  const authenticate = limits.authenticated(deps.authenticate, (res) => callerKey(principalOf(res)));
  app.use(
    uploadRoutes(
      {
        storage: deps.storage,
        metadata: deps.metadata,
        journal: deps.journal,
        maxUploadBytes: deps.maxUploadBytes,
        logger: deps.logger,
        ...(deps.describeStored ? { describeStored: deps.describeStored } : {}),
        ...(deps.idleTimeoutMs ? { idleTimeoutMs: deps.idleTimeoutMs } : {}),
        ...(deps.maxConcurrentPerPrincipal ? { maxConcurrentPerPrincipal: deps.maxConcurrentPerPrincipal } : {}),
        ...(deps.idempotency ? { idempotency: deps.idempotency } : {}),
      },
      authenticate,
    ),
  );
  app.use(
    ingestRoutes(
      {
        metadata: deps.metadata,
        ownBucket: deps.storage.bucket,
        ingest: deps.ingest ?? { allowHosts: [], s3Buckets: [] },
        ...(deps.idempotency ? { idempotency: deps.idempotency } : {}),
      },
      authenticate,
    ),
  );
  return finishApp(app, deps.logger);
}
