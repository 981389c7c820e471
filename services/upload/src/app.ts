import cors from 'cors';
import type { Express, RequestHandler, Router } from 'express';
import { callerKey, principalOf } from '@dam/auth-tokens';
import { createEdgeLimits, createHttpApp, finishApp, type EdgeLimitOptions, type IdempotencyStore, type ReadinessCheck, type TrustProxy } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { MetadataClient, PendingJournal, StoredDescriber } from './domain/ports';
import { principalSlots, type PrincipalSlots } from './http/body-limits';
import { TUS_PATH } from './http/tus-path';
import { ingestRoutes, uploadRoutes } from './http/upload.routes';
import type { UploadDeps } from './use-cases/upload-assets.use-case';

export interface UploadAppDeps {
  logger: Logger;
  storage: Storage;
  metadata: MetadataClient;
  journal: PendingJournal;
  authenticate: RequestHandler;
  /** Also accepts a user's upload key (CONTRACT §12): Upload Asset and the tus endpoints only. Default: authenticate. */
  authenticateUploads?: RequestHandler;
  /** Resumable uploads (tus): the router, given the upload deps and the authenticator that takes upload keys. */
  tus?: (deps: UploadDeps & { idempotency?: IdempotencyStore; slots: PrincipalSlots }, authenticate: RequestHandler) => Router;
  /** Origins browsers may call from (CORS); `*` by default: credentials travel in headers, never cookies. */
  corsOrigins?: string[] | '*';
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
  const authenticateUploads = limits.authenticated(deps.authenticateUploads ?? deps.authenticate, (res) => callerKey(principalOf(res)));
  const origin = deps.corsOrigins === undefined || deps.corsOrigins === '*' ? '*' : deps.corsOrigins;
  const exposedHeaders = ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed', 'X-Asset-Id'];
  // tus answers its own OPTIONS (discovery and preflight); cors only adds its headers there.
  app.use(TUS_PATH, cors({ origin, exposedHeaders, preflightContinue: true }));
  // One count of request bodies at once per caller, whichever route reads them (multipart, tus, a repeat).
  const slots = principalSlots(deps.maxConcurrentPerPrincipal ?? 0);
  const bodyDeps = { ...uploadDepsOf(deps), ...(deps.idleTimeoutMs ? { idleTimeoutMs: deps.idleTimeoutMs } : {}), slots };
  if (deps.tus) app.use(deps.tus({ ...bodyDeps, ...(deps.idempotency ? { idempotency: deps.idempotency } : {}) }, authenticateUploads));
  app.use(cors({ origin, exposedHeaders, maxAge: 600 }));
  app.use(
    uploadRoutes(
      {
        ...bodyDeps,
        ...(deps.idempotency ? { idempotency: deps.idempotency } : {}),
      },
      authenticate,
      authenticateUploads,
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

function uploadDepsOf(deps: UploadAppDeps): UploadDeps {
  return {
    storage: deps.storage,
    metadata: deps.metadata,
    journal: deps.journal,
    maxUploadBytes: deps.maxUploadBytes,
    logger: deps.logger,
    ...(deps.describeStored ? { describeStored: deps.describeStored } : {}),
  };
}
