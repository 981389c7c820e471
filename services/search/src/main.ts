import { telemetry } from './instrument'; // must stay the first import
import { bucketReplayStore, createServiceVerifier } from '@dam/auth-tokens';
import { createPool, ping } from '@dam/db';
import {
  ASSET_EVENTS,
  ASSET_PURGES,
  COLLECTIONS,
  connectNats,
  DATA_SCHEMAS,
  natsReachable,
  kvBucketOptions,
  openServiceTokenBucket,
  waitForStreams,
} from '@dam/events';
import { runMain, runService, startPoller } from '@dam/http';
import { createLogger } from '@dam/logging';
import { ResultSetRepository } from './adapters/result-set.repository';
import { SearchIndexRepository } from './adapters/search-index.repository';
import { PgSearchIndex } from './adapters/search.repository';
import { buildSearchApp } from './app';
import { loadSearchConfig } from './config';
import { readModelWorkers } from './consumers/read-model.consumers';
import { migrateSearch } from './migrations';

async function main(): Promise<void> {
  const config = loadSearchConfig();
  const logger = createLogger({ service: 'search', level: config.LOG_LEVEL });
  const pool = createPool(config);
  const applied = await migrateSearch(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const nc = await connectNats(config.NATS_URL, 'search', config.NATS_NKEY_SEED);
  // A service token is single-use across every replica (security review I6).
  const replay = bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger)));
  await waitForStreams(nc, [ASSET_EVENTS, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const model = new SearchIndexRepository(pool);
  const resultSets = new ResultSetRepository(pool);

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { postgres: () => ping(pool) },
    degradedChecks: { nats: () => natsReachable(nc) },
    workers: [
      ...readModelWorkers(nc, model, logger),
      {
        kind: 'poller',
        name: 'expired-result-sets',
        start: () => startPoller({ name: 'expired-result-sets', intervalMs: 60_000, logger, run: () => resultSets.deleteExpired(), runAtStart: false }),
      },
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
      { name: 'postgres', close: () => pool.end() },
    ],
    app: (readiness) =>
      buildSearchApp({
        logger,
        readiness,
        verifier: createServiceVerifier({
          service: 'search',
          trusted: config.SERVICE_TRUSTED_KEYS,
          replay,
          onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only"),
        }),
        index: new PgSearchIndex(pool),
        resultSets,
        resultSetTtlMs: config.RESULT_SET_TTL_MS,
        ...(config.SEARCH_SUNSET ? { sunset: config.SEARCH_SUNSET } : {}),
      }),
  });
}

runMain(main);
