import { telemetry } from './instrument'; // must stay the first import
import { createServiceSigner } from '@dam/auth-tokens';
import { jetstream } from '@nats-io/jetstream';
import { createPool, pgIdempotencyStore } from '@dam/db';
import { connectNats, UsageMeter } from '@dam/events';
import { edgeLimitsFromConfig, idempotencySweeper, memoryIdempotencyStore, runMain, runService, startPoller, type ReadinessCheck } from '@dam/http';
import { createLogger } from '@dam/logging';
import { assetChangeFollower } from './adapters/asset-change.follower';
import { createGatewayApp } from './app';
import { loadGatewayConfig } from './config';
import { ReadCache } from './domain/read-cache';
import { migrateGateway } from './migrations';

async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  // Usage statistics: authenticated requests counted per group and user, published every USAGE_FLUSH_MS.
  const nc = config.NATS_URL ? await connectNats(config.NATS_URL, 'gateway', config.NATS_NKEY_SEED) : undefined;
  if (!nc) logger.warn('NATS_URL is not set: API requests are not counted');
  const requests = new UsageMeter('api_requests');
  // Idempotency-Key (CONTRACT §13): responses kept in its database for every replica (so keyed requests work while
  // NATS is down); in this process only without DATABASE_URL. PostgreSQL down fails keyed requests only (503), so
  // it is no readiness check: every other request still works.
  const pool = config.DATABASE_URL ? createPool({ DATABASE_URL: config.DATABASE_URL, DB_POOL_MAX: config.DB_POOL_MAX }) : undefined;
  if (pool) {
    const applied = await migrateGateway(pool);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  } else logger.warn('DATABASE_URL is not set: Idempotency-Key responses are kept in this process only');
  const keys = pool ? pgIdempotencyStore(pool) : undefined;
  const idempotency = keys ?? memoryIdempotencyStore();
  // Get Data answers kept until metadata says the asset changed (its notices come over NATS: none kept without it).
  const readCache = nc && config.READ_CACHE_TTL_MS > 0 ? new ReadCache({ ttlMs: config.READ_CACHE_TTL_MS, maxBytes: config.READ_CACHE_MAX_BYTES }) : undefined;
  const gatewayApp = (readiness: ReadinessCheck) =>
    createGatewayApp({
      readiness,
      ...(nc ? { countRequest: (p) => requests.add(p.group_id, p.user_id, 1) } : {}),
      logger,
      jwtSecret: config.JWT_SECRET,
      ...(config.JWT_PREVIOUS_SECRET ? { jwtPreviousSecret: config.JWT_PREVIOUS_SECRET } : {}),
      signer: createServiceSigner(config.SERVICE_KEY),
      upstreams: {
        auth: config.AUTH_URL,
        metadata: config.METADATA_URL,
        search: config.SEARCH_URL,
        'link-signing': config.LINK_SIGNING_URL,
        webhook: config.WEBHOOK_URL,
      },
      upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
      storeTimeoutMs: config.S3_TIMEOUT_MS,
      limits: edgeLimitsFromConfig(config, { onError: (err) => logger.warn({ err }, 'RATE_LIMIT_PEERS lookup failed: the last replica count holds') }),
      userStatusTtlMs: config.USER_STATUS_TTL_MS,
      idempotency,
      ...(readCache ? { readCache } : {}),
      console: {
        publicUploadUrl: config.PUBLIC_UPLOAD_URL,
        publicCdnUrl: config.PUBLIC_CDN_URL,
        ...(config.CONSOLE_DIR ? { dir: config.CONSOLE_DIR } : {}),
      },
    });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    workers: [
      ...(keys ? [idempotencySweeper(keys, config.IDEMPOTENCY_SWEEP_INTERVAL_MS, logger)] : []),
      ...(nc && readCache ? [assetChangeFollower(nc, readCache, logger)] : []),
      // The counts, published every USAGE_FLUSH_MS and once more at shutdown (after the last request drained).
      ...(nc
        ? [
            {
              kind: 'poller' as const,
              name: 'usage-flush',
              start: () =>
                startPoller({
                  name: 'usage-flush',
                  intervalMs: config.USAGE_FLUSH_MS,
                  logger,
                  run: () => requests.flushTo(jetstream(nc)),
                  runAtStart: false,
                  runAtStop: true,
                }),
            },
          ]
        : []),
    ],
    // Upstream sockets are left alone: requests still draining use them, and the process exits after.
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      ...(nc ? [{ name: 'nats', close: () => nc.drain() }] : []),
      ...(pool ? [{ name: 'postgres', close: () => pool.end() }] : []),
    ],
    // Its readiness: its workers' (the usage flush) and the upstreams' health, checked inside the app.
    app: (readiness) => gatewayApp(readiness).app,
  });
}

runMain(main);
