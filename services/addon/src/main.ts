import { telemetry } from './instrument'; // must stay the first import
import { jetstream } from '@nats-io/jetstream';
import { connectNats, DAM_INTERNAL, natsReachable, waitForStreams } from '@dam/events';
import { runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { ObjectDetector } from './adapters/object-detector';
import { runTesseract, tesseractReady } from './adapters/tesseract';
import { buildAddonApp } from './app';
import { loadAddonConfig } from './config';
import { addonJobWorker } from './consumers/addon-jobs.consumer';

async function main(): Promise<void> {
  const config = loadAddonConfig();
  const logger = createLogger({ service: 'addon', level: config.LOG_LEVEL });
  const nc = await connectNats(config.NATS_URL, 'addon', config.NATS_NKEY_SEED);
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const storage = createStorage(storageConfigFromEnv(config));
  // The OCR engine is a Debian package: without it, /readyz says so and text extraction jobs fail with the reason.
  const ocrReady = await tesseractReady(config.TESSERACT_PATH, config.OCR_LANGUAGE);
  if (!ocrReady) logger.error({ path: config.TESSERACT_PATH, language: config.OCR_LANGUAGE }, 'tesseract with its language data is not installed: text_extraction cannot run');

  // The object detector loads once, in the background; /readyz says whether it did, and tagging jobs fail with the
  // reason when it did not (the service itself keeps running).
  const detector = ObjectDetector.load();
  let detectorReady = false;
  detector.then(
    () => {
      detectorReady = true;
      logger.info('object detector loaded');
    },
    (error: unknown) => logger.error({ err: error }, 'the object detector could not load: auto_tagging cannot run'),
  );

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { nats: () => natsReachable(nc), storage: () => storage.reachable(), text_extraction: async () => ocrReady, auto_tagging: async () => detectorReady },
    workers: [
      addonJobWorker(
        nc,
        {
          js: jetstream(nc),
          storage,
          logger,
          heartbeatMs: config.JOB_HEARTBEAT_MS,
          maxInputPixels: config.MAX_INPUT_PIXELS,
          ocr: (png) => runTesseract(png, { path: config.TESSERACT_PATH, language: config.OCR_LANGUAGE, timeoutMs: config.OCR_TIMEOUT_MS }),
          objects: () => detector,
          minConfidence: config.TAGGING_MIN_CONFIDENCE,
        },
        { concurrency: config.CONCURRENCY, ackWaitMs: config.ACK_WAIT_MS, maxDeliver: config.MAX_DELIVER, backoffMs: config.RETRY_BACKOFF_MS },
      ),
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) => buildAddonApp({ logger, readiness }),
  });
}

runMain(main);
