import { telemetry } from './instrument'; // must stay the first import
import { createServiceVerifier } from '@dam/auth-tokens';
import { createPool, ping } from '@dam/db';
import { connectNats, ensureStreams, natsReachable } from '@dam/events';
import { startOutboxRelay } from '@dam/outbox';
import { runMain, serve } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { pgTransactions } from './adapters/transaction';
import { buildMetadataApp } from './app';
import { loadMetadataConfig } from './config';
import { consumeConversionsCompleted } from './consumers/conversions-completed.handler';
import { migrateMetadata } from './migrations';

async function main(): Promise<void> {
  const config = loadMetadataConfig();
  const logger = createLogger({ service: 'metadata', level: config.LOG_LEVEL });

  const pool = createPool(config.DATABASE_URL);
  const applied = await migrateMetadata(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const storage = createStorage(storageConfigFromEnv(config));
  await storage.ensureBucket();

  const nc = await connectNats(config.NATS_URL, 'metadata', config.NATS_NKEY_SEED);
  await ensureStreams(nc);
  const relay = startOutboxRelay({ pool, nc, logger });
  const consumer = await consumeConversionsCompleted(nc, pgTransactions(pool), logger, config.CONVERSIONS_CONCURRENCY);


  const app = buildMetadataApp({
    logger,
    pool,
    storage,
    verifier: createServiceVerifier({ service: 'metadata', trusted: config.SERVICE_TRUSTED_KEYS }),
    readiness: async () => ({
      postgres: await ping(pool),
      nats: await natsReachable(nc),
      s3: await storage.reachable(),
    }),
  });

  await serve(app, {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: async () => {
      // Stop taking messages first, then let the relay publish what is already committed.
      await consumer.stop();
      await relay.stop();
      await nc.drain().catch(() => undefined);
      await pool.end();
      await telemetry.shutdown();
    },
  });
}

runMain(main);
