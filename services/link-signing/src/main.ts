import { telemetry } from './instrument'; // must stay the first import
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { bucketReplayStore, createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { connectNats, DAM_INTERNAL, natsReachable, kvBucketOptions, openServiceTokenBucket, UsageMeter, waitForStreams } from '@dam/events';
import { jobRuntime } from '@dam/jobs';
import { replicaCountFromConfig, runMain, runService, startPoller } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { ByteCache } from './adapters/byte-cache';
import { CacheTier } from './adapters/cache-tier';
import { exposeCacheMetrics } from './adapters/cache.metrics';
import { suiteClients } from './adapters/suite.clients';
import { buildLinkSigningApp } from './app';
import { loadLinkSigningConfig } from './config';
import { cacheInvalidation, evictionFollower } from './consumers/cache-invalidation.consumer';
import { cdnJobWorker } from './consumers/cdn-jobs.consumer';

async function main(): Promise<void> {
  const config = loadLinkSigningConfig();
  const logger = createLogger({ service: 'link-signing', level: config.LOG_LEVEL });
  const nc = await connectNats(config.NATS_URL, 'link-signing', config.NATS_NKEY_SEED);
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const js = jetstream(nc);
  const storage = createStorage(storageConfigFromEnv(config));
  const signer = createServiceSigner(config.SERVICE_KEY);
  const cache = new ByteCache(
    config.CDN_CACHE_DIR ?? path.join(tmpdir(), `dam-cdn-cache-${config.PORT}`),
    config.CDN_CACHE_MAX_BYTES,
    config.CDN_CACHE_MAX_OBJECT_BYTES,
  );
  await cache.init();
  exposeCacheMetrics(cache);
  const usage = new UsageMeter('cdn_bytes');
  const tier = config.CDN_TIER_PURGE_URLS.length > 0 ? new CacheTier({ purgeUrls: config.CDN_TIER_PURGE_URLS, logger }) : undefined;
  const clients = suiteClients({ authUrl: config.AUTH_URL, metadataUrl: config.METADATA_URL, signer });
  const replay = bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger)));

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { s3: () => storage.reachable() },
    degradedChecks: { nats: () => natsReachable(nc) },
    workers: [
      cdnJobWorker({ js, clients, storage, cache, logger }, jobRuntime(nc, config, logger, { concurrency: 2 })),
      cacheInvalidation(nc, cache, logger, tier),
      evictionFollower(nc, cache, logger, tier),
      // The bytes served, published every USAGE_FLUSH_MS and once more at shutdown.
      {
        kind: 'poller',
        name: 'usage-flush',
        start: () =>
          startPoller({ name: 'usage-flush', intervalMs: config.USAGE_FLUSH_MS, logger, run: () => usage.flushTo(js), runAtStart: false, runAtStop: true }),
      },
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) =>
      buildLinkSigningApp({
        logger,
        readiness,
        verifier: createServiceVerifier({
          service: 'link-signing',
          trusted: config.SERVICE_TRUSTED_KEYS,
          // A service token is single-use across every replica, not only in this one (security review I6).
          replay,
          onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only"),
        }),
        clients,
        storage,
        cache,
        usage,
        cdnBase: config.PUBLIC_CDN_URL,
        signingKeys: config.LINK_SIGNING_KEYS,
        edgeLimit: { perMinute: config.CDN_RATE_LIMIT_ADDRESS_PER_MINUTE, burst: config.CDN_RATE_LIMIT_ADDRESS_BURST },
        edgeReplicas: replicaCountFromConfig(config, {
          onError: (err) => logger.warn({ err }, 'RATE_LIMIT_PEERS lookup failed: the last replica count holds'),
        }),
        accessCacheTtlMs: config.CDN_ACCESS_CACHE_TTL_MS,
        cdnMaxAgeSeconds: config.CDN_MAX_AGE,
        ...(tier ? { tier } : {}),
      }),
  });
}

runMain(main);
