import { telemetry } from './instrument'; // must stay the first import
import { jetstreamManager } from '@nats-io/jetstream';
import { bucketReplayStore, createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { createPool, ping } from '@dam/db';
import {
  ASSET_EVENTS,
  connectNats,
  DAM_INTERNAL,
  natsReachable,
  kvBucketOptions,
  openServiceTokenBucket,
  waitForStreams,
  followSettingsChanges,
} from '@dam/events';
import { jobRuntime } from '@dam/jobs';
import { guardedPost, parseAllowHosts, runMain, runService, startPoller } from '@dam/http';
import { groupSettingsClient } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { startOutboxRelay } from '@dam/outbox';
import { DeliveryRepository } from './adapters/delivery.repository';
import { buildWebhookApp } from './app';
import { loadWebhookConfig } from './config';
import { ackFloorOf, assetEventsWorker } from './consumers/asset-events.consumer';
import { dispatchWorker } from './consumers/dispatch.poller';
import { reissueWorker } from './consumers/reissue-jobs.consumer';
import { webhookSettingsOf } from './domain/delivery';
import { migrateWebhook } from './migrations';

async function main(): Promise<void> {
  const config = loadWebhookConfig();
  const logger = createLogger({ service: 'webhook', level: config.LOG_LEVEL });
  const pool = createPool(config);
  const applied = await migrateWebhook(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const nc = await connectNats(config.NATS_URL, 'webhook', config.NATS_NKEY_SEED);
  // A service token is single-use across every replica (security review I6).
  const replay = bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger)));
  await waitForStreams(nc, [ASSET_EVENTS, DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const jsm = await jetstreamManager(nc, { timeout: 2_000 });
  const repo = new DeliveryRepository(pool);
  // Settings are reused until auth announces a change of the group (a changed URL list or secret still applies to
  // the next event and attempt); without NATS connected they are read fresh (or reused for SETTINGS_CACHE_MS).
  const groupSettings = groupSettingsClient(config, createServiceSigner(config.SERVICE_KEY), followSettingsChanges(nc));
  const settings = async (groupId: number) => webhookSettingsOf(await groupSettings.get(String(groupId)));
  const allowHosts = parseAllowHosts(config.WEBHOOK_ALLOW_HOSTS);
  const dispatcher = dispatchWorker({
    deliveries: repo,
    settings,
    send: (url, headers, body) =>
      guardedPost(url, { headers, body: Buffer.from(body), timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowHosts, userAgent: 'dam-webhooks/1' }),
    retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    perUrlConcurrency: config.WEBHOOK_PER_URL_CONCURRENCY,
    perGroupConcurrency: config.WEBHOOK_PER_GROUP_CONCURRENCY,
    intervalMs: config.DISPATCH_INTERVAL_MS,
    floor: () => ackFloorOf(jsm),
    clock: { now: () => new Date() },
    logger,
  });
  const { wake } = dispatcher;

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { postgres: () => ping(pool) },
    degradedChecks: { nats: () => natsReachable(nc) },
    workers: [
      assetEventsWorker(nc, { repo, settings, wake, logger }),
      reissueWorker({ repo, settings, wake, logger }, jobRuntime(nc, config, logger, { concurrency: 1 })),
      dispatcher.worker,
      // The notices of deliveries that gave up (Login's notifications), written by the database with the failure.
      { kind: 'poller', name: 'outbox-relay', start: () => startOutboxRelay({ pool, nc, logger }) },
      {
        kind: 'poller',
        name: 'event-log-pruning',
        start: () =>
          startPoller({ name: 'event-log-pruning', intervalMs: 3_600_000, logger, run: () => repo.pruneEvents(config.EVENT_LOG_DAYS), runAtStart: false }),
      },
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
      { name: 'postgres', close: () => pool.end() },
    ],
    app: (readiness) =>
      buildWebhookApp({
        logger,
        readiness,
        verifier: createServiceVerifier({
          service: 'webhook',
          trusted: config.SERVICE_TRUSTED_KEYS,
          replay,
          onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only"),
        }),
        repo,
      }),
  });
}

runMain(main);
