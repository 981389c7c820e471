import { telemetry } from './instrument'; // must stay the first import
import { setFlagsFromString } from 'node:v8';
import { jetstream } from '@nats-io/jetstream';
import { createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { connectNats, DAM_INTERNAL, natsReachable, waitForStreams, followSettingsChanges } from '@dam/events';
import { runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { GroupSettingsClient } from '@dam/internal-api';
import { ImageProcessor } from './adapters/image-processor';
import { buildConversionApp } from './app';
import { loadConversionConfig } from './config';
import { conversionJobWorker } from './consumers/job-command.consumer';
import { transformer } from './use-cases/transform.use-case';

/**
 * No incremental marking: this process's JavaScript does little (libvips works on its own threads), so V8 judges
 * its collections cheap, keeps the old generation's limit a few MB above what lives, and started a full mark every
 * few hundred milliseconds under load (20-30 per 20 three-output jobs, about 1 s of main-thread time: 6 % of the
 * service's CPU). Without it a full collection runs only when the old generation is really full (2 per run), a
 * pause of 10-40 ms on a ~60 MB heap, which jobs and on-demand transforms do not notice.
 */
setFlagsFromString('--no-incremental-marking');

async function main(): Promise<void> {
  const config = loadConversionConfig();
  const logger = createLogger({ service: 'conversion', level: config.LOG_LEVEL });

  const nc = await connectNats(config.NATS_URL, 'conversion', config.NATS_NKEY_SEED);
  // metadata creates the streams (only its NATS identity may); start in any order and wait for them.
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const storage = createStorage(storageConfigFromEnv(config));
  const images = new ImageProcessor(config.MAX_INPUT_PIXELS);

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { nats: () => natsReachable(nc), s3: () => storage.reachable() },
    // Stopping pulls no more; in-flight images finish and are acked before the connection drains.
    workers: [
      conversionJobWorker(
        nc,
        {
          js: jetstream(nc),
          heartbeatMs: config.JOB_HEARTBEAT_MS,
          progressIntervalMs: config.JOB_PROGRESS_INTERVAL_MS,
          logger,
          storage,
          settings: new GroupSettingsClient({
            authUrl: config.AUTH_URL,
            signer: createServiceSigner(config.SERVICE_KEY),
            ttlMs: config.SETTINGS_CACHE_MS,
            maxAgeMs: config.SETTINGS_MAX_AGE_MS,
            changes: followSettingsChanges(nc),
          }),
          images,
          maxOutputPixels: config.MAX_OUTPUT_PIXELS,
        },
        { concurrency: config.CONCURRENCY, ackWaitMs: config.ACK_WAIT_MS, maxDeliver: config.MAX_DELIVER, backoffMs: config.RETRY_BACKOFF_MS, outageRetryMs: config.OUTAGE_RETRY_MS },
      ),
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) =>
      buildConversionApp({
        logger,
        readiness,
        verifier: createServiceVerifier({ service: 'conversion', trusted: config.SERVICE_TRUSTED_KEYS }),
        transform: transformer({ logger, storage, images, maxOutputPixels: config.MAX_OUTPUT_PIXELS }),
      }),
  });
}

runMain(main);
