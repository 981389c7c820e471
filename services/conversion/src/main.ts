import './threadpool'; // must stay the first import: sizes libuv's pool before anything starts it
import { telemetry } from './instrument'; // and this the second
import { bucketReplayStore, createServiceSigner, createServiceVerifier } from '@dam/auth-tokens';
import { connectNats, DAM_INTERNAL, natsReachable, kvBucketOptions, openServiceTokenBucket, waitForStreams, followSettingsChanges } from '@dam/events';
import { jobRuntime } from '@dam/jobs';
import { collectGarbageInFewFullPauses, runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { groupSettingsClient } from '@dam/internal-api';
import { describeImage } from './adapters/image-describer';
import { ImageProcessor } from './adapters/image-processor';
import { storageTransformVariants } from './adapters/transform-variants';
import { buildConversionApp } from './app';
import { loadConversionConfig } from './config';
import { conversionJobWorker } from './consumers/job-command.consumer';
import { transformer } from './use-cases/transform.use-case';

// Few full pauses instead of frequent incremental marks: its JavaScript does little (see the function).
collectGarbageInFewFullPauses();

async function main(): Promise<void> {
  const config = loadConversionConfig();
  const logger = createLogger({ service: 'conversion', level: config.LOG_LEVEL });

  const nc = await connectNats(config.NATS_URL, 'conversion', config.NATS_NKEY_SEED);
  // A service token is single-use across every replica (security review I6).
  const replay = bucketReplayStore(await openServiceTokenBucket(nc, kvBucketOptions('SERVICE_TOKENS', config, logger)));
  // metadata creates the streams (only its NATS identity may); start in any order and wait for them.
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const storage = createStorage(storageConfigFromEnv(config));
  const images = new ImageProcessor(config.MAX_INPUT_PIXELS);

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { s3: () => storage.reachable() },
    degradedChecks: { nats: () => natsReachable(nc) },
    // Stopping pulls no more; in-flight images finish and are acked before the connection drains.
    workers: [
      conversionJobWorker(
        {
          logger,
          storage,
          settings: groupSettingsClient(config, createServiceSigner(config.SERVICE_KEY), followSettingsChanges(nc)),
          images,
          describe: describeImage,
          maxOutputPixels: config.MAX_OUTPUT_PIXELS,
        },
        jobRuntime(nc, config, logger, { concurrency: config.CONCURRENCY }),
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
        verifier: createServiceVerifier({
          service: 'conversion',
          trusted: config.SERVICE_TRUSTED_KEYS,
          replay,
          onReplayStoreError: (err) => logger.warn({ err }, "service-token replay store unavailable: this replica's own memory only"),
        }),
        transform: transformer({
          logger,
          storage,
          variants: storageTransformVariants(storage),
          images,
          limits: {
            maxOutputPixels: config.MAX_OUTPUT_PIXELS,
            concurrency: config.TRANSFORM_CONCURRENCY,
            queue: config.TRANSFORM_QUEUE,
            queueWaitMs: config.TRANSFORM_QUEUE_WAIT_MS,
            retryAfterSeconds: config.TRANSFORM_RETRY_AFTER_SECONDS,
            maxVariants: config.MAX_TRANSFORM_VARIANTS,
          },
        }),
      }),
  });
}

runMain(main);
