import { telemetry } from './instrument'; // must stay the first import
import { createAuthenticator, createServiceSigner } from '@dam/auth-tokens';
import { connectNats, natsReachable } from '@dam/events';
import { edgeLimitsFromConfig, runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { httpMetadataClient } from './adapters/metadata.client';
import { natsPendingJournal } from './adapters/pending-upload.journal';
import { buildUploadApp } from './app';
import { loadUploadConfig } from './config';
import { startOrphanReaper } from './domain/orphan-reaper';

async function main(): Promise<void> {
  const config = loadUploadConfig();
  const logger = createLogger({ service: 'upload', level: config.LOG_LEVEL });
  const storage = createStorage(storageConfigFromEnv(config, { partSize: config.UPLOAD_PART_SIZE }));
  await storage.ensureBucket();
  const nc = await connectNats(config.NATS_URL, 'upload', config.NATS_NKEY_SEED);
  const journal = await natsPendingJournal(nc, {
    refreshMs: Math.max(50, Math.floor(config.ORPHAN_GRACE_MS / 3)),
    onError: (err, id) => logger.warn({ err, asset_id: id }, 'could not update the pending-upload journal'),
  });
  const signer = createServiceSigner(config.SERVICE_KEY);
  const metadata = httpMetadataClient({ baseUrl: config.METADATA_URL, signer });
  const served = await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { s3: () => storage.reachable(), nats: () => natsReachable(nc) },
    workers: [
      {
        kind: 'poller',
        name: 'orphan-reaper',
        start: () =>
          startOrphanReaper({ journal, storage, metadata, logger, graceMs: config.ORPHAN_GRACE_MS, intervalMs: config.ORPHAN_REAP_INTERVAL_MS }),
      },
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) =>
      buildUploadApp({
        logger,
        storage,
        metadata,
        journal,
        authenticate: createAuthenticator({ jwtSecret: config.JWT_SECRET, authUrl: config.AUTH_URL, signer, userStatusTtlMs: config.USER_STATUS_TTL_MS }),
        maxUploadBytes: config.MAX_UPLOAD_BYTES,
        idleTimeoutMs: config.UPLOAD_IDLE_TIMEOUT_MS,
        maxConcurrentPerPrincipal: config.UPLOAD_MAX_CONCURRENT_PER_PRINCIPAL,
        limits: edgeLimitsFromConfig(config),
        readiness,
      }),
  });
  // Uploads are long requests: the default 5-minute request timeout would cut a slow 5 GiB upload.
  served.server.requestTimeout = 0;
}

runMain(main);
