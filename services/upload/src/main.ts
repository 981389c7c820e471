import { telemetry } from './instrument'; // must stay the first import
import { createAuthenticator, createServiceSigner, type AuthenticatorOptions } from '@dam/auth-tokens';
import { jetstream } from '@nats-io/jetstream';
import { createPool, pgIdempotencyStore, ping } from '@dam/db';
import { connectNats, DAM_INTERNAL, natsReachable, waitForStreams } from '@dam/events';
import { reportPacingOf } from '@dam/jobs';
import {
  collectGarbageInFewFullPauses,
  edgeLimitsFromConfig,
  HostRateLimiter,
  idempotencySweeper,
  parseAllowHosts,
  runMain,
  runService,
  startPoller,
} from '@dam/http';
import { createLogger } from '@dam/logging';
import { Ffmpeg, resolveTools } from '@dam/media';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { httpMetadataClient } from './adapters/metadata.client';
import { pgPendingJournal } from './adapters/pending-upload.journal';
import { s3OrphanObjects, s3SourceObjects } from './adapters/s3-objects';
import { pgTusLocker } from './adapters/tus-locker';
import { createTusStore } from './adapters/tus-store';
import { storedVideoDescriber } from './adapters/video-describer';
import { buildUploadApp } from './app';
import { tusRoutes } from './http/tus.routes';
import { loadUploadConfig } from './config';
import { ingestJobWorker } from './consumers/ingest-job.consumer';
import { migrateUpload } from './migrations';
import { reapOrphans } from './use-cases/reap-orphans.use-case';

// Few full pauses instead of frequent incremental marks: its work is streams of bytes (see the function).
collectGarbageInFewFullPauses();

async function main(): Promise<void> {
  const config = loadUploadConfig();
  const logger = createLogger({ service: 'upload', level: config.LOG_LEVEL });
  const storageConfig = storageConfigFromEnv(config, { partSize: config.UPLOAD_PART_SIZE });
  const storage = createStorage(storageConfig);
  const tusStore = createTusStore(storageConfig, {
    expiryMs: config.TUS_EXPIRY_MS,
    partSize: config.TUS_PART_SIZE,
    partsInFlight: config.TUS_PARTS_IN_FLIGHT,
  });
  // Video metadata in the upload result when ffprobe runs here; otherwise it comes with the transcode job.
  const tools = await resolveTools({ ffmpeg: config.FFMPEG_PATH, ffprobe: config.FFPROBE_PATH }).catch((error: unknown) => {
    logger.warn({ err: { message: String(error) } }, 'no ffprobe: video metadata comes with processing only');
    return undefined;
  });
  const describeStored = tools ? storedVideoDescriber({ storage, ffmpeg: new Ffmpeg(tools, 10_000), logger }) : undefined;
  await storage.ensureBucket();
  const nc = await connectNats(config.NATS_URL, 'upload', config.NATS_NKEY_SEED);
  // Idempotency-Key (CONTRACT §13) in its database, shared by every replica: keyed requests do not need NATS.
  const pool = createPool(config);
  const applied = await migrateUpload(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const idempotency = pgIdempotencyStore(pool);
  // The objects stored but not yet registered, in the same database: an upload needs no NATS either (issue 35).
  const journal = pgPendingJournal(pool, {
    refreshMs: Math.max(50, Math.floor(config.ORPHAN_GRACE_MS / 3)),
    onError: (err, id) => logger.warn({ err, asset_id: id }, 'could not update the pending-upload journal'),
  });
  // One request at a time per resumable upload across replicas, leased in the same database: a tus PATCH needs no
  // NATS either (issue 35).
  const tusLocker = pgTusLocker(pool, {
    ttlMs: config.TUS_LOCK_TTL_MS,
    onError: (err, id) => logger.warn({ err, upload: id }, "could not renew or release a resumable upload's lease"),
  });
  const signer = createServiceSigner(config.SERVICE_KEY);
  const metadata = httpMetadataClient({ baseUrl: config.METADATA_URL, signer });
  // Ingest jobs come from metadata over DAM_INTERNAL, which metadata creates: start in any order and wait for it.
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const ingest = {
    allowHosts: parseAllowHosts(config.INGEST_ALLOW_HOSTS),
    s3Buckets: config.INGEST_S3_BUCKETS.split(',')
      .map((b) => b.trim())
      .filter(Boolean),
    maxBytes: config.MAX_UPLOAD_BYTES,
    connectTimeoutMs: config.INGEST_CONNECT_TIMEOUT_MS,
    idleTimeoutMs: config.INGEST_IDLE_TIMEOUT_MS,
    rateLimiter: new HostRateLimiter(config.INGEST_RATE_PER_MINUTE, config.INGEST_RATE_BURST),
    s3Sources: s3SourceObjects(storage),
  };
  const reaper = { journal, objects: s3OrphanObjects(storage), metadata, logger, graceMs: config.ORPHAN_GRACE_MS };
  const authOptions: AuthenticatorOptions = {
    jwtSecret: config.JWT_SECRET,
    ...(config.JWT_PREVIOUS_SECRET ? { jwtPreviousSecret: config.JWT_PREVIOUS_SECRET } : {}),
    authUrl: config.AUTH_URL,
    signer,
    userStatusTtlMs: config.USER_STATUS_TTL_MS,
  };
  const served = await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    // PostgreSQL: every upload records its object in the journal there first.
    checks: { s3: () => storage.reachable(), postgres: () => ping(pool) },
    degradedChecks: { nats: () => natsReachable(nc) },
    workers: [
      ingestJobWorker(
        { storage, logger, ingest, ownBucket: storage.bucket },
        {
          nc,
          js: jetstream(nc),
          pacing: reportPacingOf(config),
          logger,
          concurrency: config.INGEST_CONCURRENCY,
          ackWaitMs: config.INGEST_ACK_WAIT_MS,
          maxDeliver: config.INGEST_MAX_DELIVER,
        },
      ),
      {
        kind: 'poller',
        name: 'tus-expiry',
        start: () =>
          startPoller({
            name: 'tus-expiry',
            intervalMs: config.TUS_SWEEP_INTERVAL_MS,
            logger,
            run: async () => {
              const removed = await tusStore.deleteExpired();
              if (removed > 0) logger.info({ removed }, 'expired resumable uploads removed');
              // Leases their holders never released (a replica that died writing), once long expired.
              const leases = await tusLocker.sweepExpired(config.TUS_SWEEP_INTERVAL_MS);
              if (leases > 0) logger.info({ leases }, 'expired resumable-upload leases removed');
            },
          }),
      },
      idempotencySweeper(idempotency, config.IDEMPOTENCY_SWEEP_INTERVAL_MS, logger),
      {
        kind: 'poller',
        name: 'orphan-reaper',
        // A first pass at start: the usual way a crashed upload's leftovers are found is the restart that follows.
        start: () => startPoller({ name: 'orphan-reaper', intervalMs: config.ORPHAN_REAP_INTERVAL_MS, logger, run: () => reapOrphans(reaper) }),
      },
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
      { name: 'postgres', close: () => pool.end() },
    ],
    app: (readiness) =>
      buildUploadApp({
        logger,
        storage,
        ...(describeStored ? { describeStored } : {}),
        metadata,
        journal,
        authenticate: createAuthenticator(authOptions),
        authenticateUploads: createAuthenticator({ ...authOptions, uploadKeys: true }),
        tus: (uploadDeps, authenticate) => tusRoutes({ ...uploadDeps, store: tusStore, locker: tusLocker }, authenticate),
        corsOrigins:
          config.CORS_ALLOWED_ORIGINS.trim() === '*'
            ? '*'
            : config.CORS_ALLOWED_ORIGINS.split(',')
                .map((o) => o.trim())
                .filter(Boolean),
        maxUploadBytes: config.MAX_UPLOAD_BYTES,
        idleTimeoutMs: config.UPLOAD_IDLE_TIMEOUT_MS,
        maxConcurrentPerPrincipal: config.UPLOAD_MAX_CONCURRENT_PER_PRINCIPAL,
        limits: edgeLimitsFromConfig(config, { onError: (err) => logger.warn({ err }, 'RATE_LIMIT_PEERS lookup failed: the last replica count holds') }),
        ingest,
        idempotency,
        readiness,
      }),
  });
  // Uploads are long requests: the default 5-minute request timeout would cut a slow 5 GiB upload. Every body read
  // is bounded by UPLOAD_IDLE_TIMEOUT_MS instead (multipart, tus, idempotent repeats); a socket silent both ways for
  // four times that (a stalled JSON body, a client that never reads its answer) is closed as a backstop: nothing
  // legitimate is silent that long (S3 calls time out after S3_TIMEOUT_MS, 30 s by default).
  served.server.requestTimeout = 0;
  if (config.UPLOAD_IDLE_TIMEOUT_MS > 0) served.server.timeout = 4 * config.UPLOAD_IDLE_TIMEOUT_MS;
}

runMain(main);
