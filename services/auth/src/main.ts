import { telemetry } from './instrument'; // must stay the first import
import { bucketReplayStore, createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { createPool, ping } from '@dam/db';
import { parseAllowHosts, runMain, runService, startPoller } from '@dam/http';
import { createLogger } from '@dam/logging';
import { httpAssetDirectory } from './adapters/metadata-assets.client';
import { createAuthApp } from './app';
import { isDefaultAdmin, loadAuthConfig } from './config';
import { announceSettingsChanged, connectNats, DAM_INTERNAL, natsReachable, kvBucketOptions, openServiceTokenBucket, waitForStreams } from '@dam/events';
import { UsageRepository } from './adapters/usage.repository';
import { LoginAttemptRepository } from './adapters/login-attempt.repository';
import { pgAuthStore } from './adapters/pg-store';
import { usageWorker } from './consumers/usage.consumer';
import { noticesWorker } from './consumers/notices.consumer';
import { migrateAuth } from './migrations';
import { bootstrap } from './use-cases/bootstrap.use-case';

async function main(): Promise<void> {
  const config = loadAuthConfig();
  const logger = createLogger({ service: 'auth', level: config.LOG_LEVEL });
  const pool = createPool(config);

  const applied = await migrateAuth(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const store = pgAuthStore(pool);
  const boot = await bootstrap(store, { email: config.ADMIN_EMAIL, password: config.ADMIN_PASSWORD });
  if (boot.created) {
    logger.info(
      { group_id: boot.group_id, admin_user_id: boot.admin_user_id, admin_email: config.ADMIN_EMAIL },
      isDefaultAdmin(config)
        ? 'created group 1 and its ADMIN with the documented local default email and password (README): change them'
        : 'created group 1 and its ADMIN from ADMIN_EMAIL / ADMIN_PASSWORD',
    );
  }

  // Usage statistics: the records every service publishes, counted here (none without NATS_URL).
  const usage = new UsageRepository(pool);
  const loginAttempts = new LoginAttemptRepository(pool);
  const nc = config.NATS_URL ? await connectNats(config.NATS_URL, 'auth', config.NATS_NKEY_SEED) : undefined;
  // A service token is single-use across every replica (security review I6); without NATS, per replica only.
  const replay = nc ? bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger))) : undefined;
  if (nc) await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  else logger.warn('NATS_URL is not set: usage records are not counted, and Login shows no notices of other services');

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { postgres: () => ping(pool) },
    ...(nc ? { degradedChecks: { nats: () => natsReachable(nc) } } : {}),
    workers: [
      ...(nc ? [usageWorker(nc, usage, logger), noticesWorker(nc, store, logger)] : []),
      {
        kind: 'poller' as const,
        // The login limiter's counts all replicas share, once their windows are over.
        name: 'login-attempt-pruning',
        start: () => startPoller({ name: 'login-attempt-pruning', intervalMs: 600_000, logger, run: () => loginAttempts.prune(Date.now()) }),
      },
      {
        kind: 'poller' as const,
        name: 'usage-record-pruning',
        start: () => startPoller({ name: 'usage-record-pruning', intervalMs: 3_600_000, logger, run: () => usage.pruneRecords(), runAtStart: false }),
      },
      {
        kind: 'poller' as const,
        // Login's notifications past their retention, seen or not.
        name: 'notification-pruning',
        start: () =>
          startPoller({
            name: 'notification-pruning',
            intervalMs: 3_600_000,
            logger,
            run: () => store.notifications.prune(config.NOTIFICATION_RETENTION_DAYS),
          }),
      },
    ],
    // Closed after in-flight requests drained, so the pool is no longer in use.
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      ...(nc ? [{ name: 'nats', close: () => nc.drain() }] : []),
      { name: 'postgres', close: () => pool.end() },
    ],
    app: (readiness) =>
      createAuthApp({
        readiness,
        pool,
        logger,
        jwtSecret: config.JWT_SECRET,
        ...(config.JWT_PREVIOUS_SECRET ? { jwtPreviousSecret: config.JWT_PREVIOUS_SECRET } : {}),
        verifier: createServiceVerifier({
          service: 'auth',
          trusted: config.SERVICE_TRUSTED_KEYS,
          ...(replay
            ? { replay, onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only") }
            : {}),
        }),
        jwtTtlSeconds: config.JWT_TTL,
        assets: httpAssetDirectory({ baseUrl: config.METADATA_URL, signer: createServiceSigner(config.SERVICE_KEY) }),
        webhookAllowHosts: parseAllowHosts(config.WEBHOOK_ALLOW_HOSTS),
        ...(nc ? { announceSettingsChange: (groupId: number) => announceSettingsChanged(nc, groupId) } : {}),
        loginLimits: {
          maxPerEmail: config.LOGIN_MAX_FAILURES_PER_EMAIL,
          maxPerAddress: config.LOGIN_MAX_FAILURES_PER_ADDRESS,
          windowSeconds: config.LOGIN_WINDOW_SECONDS,
          freeFailures: config.LOGIN_FREE_FAILURES,
          maxDelaySeconds: config.LOGIN_MAX_DELAY_SECONDS,
          boundDelayMs: config.LOGIN_BOUND_DELAY_MS,
        },
      }),
  });
}

runMain(main);
