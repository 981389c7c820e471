import { telemetry } from './instrument'; // must stay the first import
import { bucketReplayStore, createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { groupSettingsClient } from '@dam/internal-api';
import { createPool, ping } from '@dam/db';
import { addonStatusClient, connectNats, ensureStreams, natsReachable, followSettingsChanges, kvBucketOptions, openServiceTokenBucket } from '@dam/events';
import { startOutboxRelay } from '@dam/outbox';
import { runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { assetChangeNotices } from './adapters/asset-change.notices';
import { bulkDeleteExports } from './adapters/bulk-delete-export.store';
import { DataUpdateRepository } from './adapters/data-update.repository';
import { pgTransactions } from './adapters/transaction';
import { buildMetadataApp } from './app';
import { loadMetadataConfig } from './config';
import { publicPolicySync } from './adapters/public-object.repository';
import { transformClient } from './adapters/transform.client';
import { dataUpdatesPoller, localJobsPoller, objectDeletionsPoller, publicPolicyPoller, storageGaugePoller } from './consumers/housekeeping.pollers';
import { jobLeaseSweeper, jobReportsWorker } from './consumers/job-reports.consumer';
import { migrateMetadata } from './migrations';
import { autoAddonsPlanner } from './use-cases/addons.use-case';

async function main(): Promise<void> {
  const config = loadMetadataConfig();
  const logger = createLogger({ service: 'metadata', level: config.LOG_LEVEL });

  const pool = createPool(config);
  const applied = await migrateMetadata(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const storage = createStorage(storageConfigFromEnv(config));
  await storage.ensureBucket();

  const nc = await connectNats(config.NATS_URL, 'metadata', config.NATS_NKEY_SEED);
  // A service token is single-use across every replica (security review I6).
  const replay = bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger)));
  const streams = await ensureStreams(nc, { replicas: config.NATS_STREAM_REPLICAS, maxBytes: config.NATS_STREAMS_MAX_BYTES });
  for (const s of streams) {
    if (s.previousReplicas !== undefined && s.previousReplicas !== s.replicas) {
      logger.warn({ stream: s.name, from: s.previousReplicas, to: s.replicas }, 'stream scaled to NATS_STREAM_REPLICAS');
    }
    if (s.maxBytesNotLowered)
      logger.warn(
        { stream: s.name, ...s.maxBytesNotLowered },
        'stream holds more than its share of NATS_STREAMS_MAX_BYTES: its limit is left as it was; raise the budget',
      );
  }
  logger.info(
    { streams: streams.map((s) => `${s.name} (${s.action})`), replicas: config.NATS_STREAM_REPLICAS, max_bytes: config.NATS_STREAMS_MAX_BYTES ?? 'unlimited' },
    'streams ready',
  );

  const timings = { queuedMs: config.JOB_QUEUED_TIMEOUT_MS, leaseMs: config.JOB_LEASE_MS, maxAttempts: config.JOB_MAX_ATTEMPTS };
  const transactions = pgTransactions(pool, timings);
  // Reused until auth announces a change of the group (SETTINGS_MAX_AGE_MS at most).
  const groupSettings = groupSettingsClient(config, createServiceSigner(config.SERVICE_KEY), followSettingsChanges(nc));
  // Whether an addon's model failed to load (asked of the addon service, its answer cached for a few seconds).
  const addonUnavailable = addonStatusClient(nc);
  // CONTRACT §3 `addons.auto.image`, §16: the image addons that run with every upload, replace, ingest and undelete.
  const autoAddons = autoAddonsPlanner((groupId) => groupSettings.get(String(groupId)), addonUnavailable);
  const syncPublicPolicy = publicPolicySync(pool, storage, { logger, sweepEveryMs: config.PUBLIC_SWEEP_INTERVAL_MS });

  const notices = assetChangeNotices(pool, nc, logger);
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { postgres: () => ping(pool), s3: () => storage.reachable() },
    degradedChecks: { nats: () => natsReachable(nc) },
    // Stopped in this order: take no more reports, then let the relay publish what is already committed.
    workers: [
      jobReportsWorker(nc, transactions, logger, config.JOB_REPORTS_CONCURRENCY, { autoAddons }),
      jobLeaseSweeper(transactions, timings, logger, config.JOB_SWEEP_INTERVAL_MS),
      localJobsPoller(transactions, logger, config.LOCAL_JOBS_INTERVAL_MS, bulkDeleteExports(storage)),
      dataUpdatesPoller(transactions, new DataUpdateRepository(pool), logger, config.DATA_UPDATES_INTERVAL_MS),
      objectDeletionsPoller(pool, storage, logger, config.OBJECT_DELETIONS_INTERVAL_MS, {
        maxAttempts: config.OBJECT_DELETION_MAX_ATTEMPTS,
        backoffMs: config.OBJECT_DELETION_BACKOFF_MS,
        maxBackoffMs: 3_600_000,
      }),
      publicPolicyPoller(syncPublicPolicy, logger, config.PUBLIC_POLICY_INTERVAL_MS),
      storageGaugePoller(pool, logger, config.STORAGE_GAUGE_INTERVAL_MS),
      { kind: 'poller', name: 'outbox-relay', start: () => startOutboxRelay({ pool, nc, logger }) },
      // Every change of an asset's record, to the gateways' Get Data caches (plain NATS, at once; not through the outbox).
      notices.worker,
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'postgres', close: () => pool.end() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) =>
      buildMetadataApp({
        logger,
        pool,
        storage,
        jobTimings: timings,
        replacedOriginalGraceMs: config.REPLACED_ORIGINAL_GRACE_MS,
        maxUploadBytes: config.MAX_UPLOAD_BYTES,
        syncPublicPolicy,
        transforms: transformClient({ baseUrl: config.CONVERSION_URL, signer: createServiceSigner(config.SERVICE_KEY) }),
        groupSettings,
        addonUnavailable,
        noticesSettled: notices.settled,
        verifier: createServiceVerifier({
          service: 'metadata',
          trusted: config.SERVICE_TRUSTED_KEYS,
          replay,
          onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only"),
        }),
        readiness,
      }),
  });
}

runMain(main);
