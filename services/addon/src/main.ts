import { telemetry } from './instrument'; // must stay the first import
import { jetstream } from '@nats-io/jetstream';
import { connectNats, DAM_INTERNAL, natsReachable, serveAddonStatus, waitForStreams, type AddonState } from '@dam/events';
import { jobRuntime } from '@dam/jobs';
import { collectGarbageInFewFullPauses, runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { BackgroundRemoval } from './adapters/background-removal';
import { HumanModels } from './adapters/human-models';
import { originalReader } from './adapters/original-reader';
import { cachedOriginals } from './adapters/originals-cache';
import { PeopleRepository } from './adapters/people.repository';
import { migrateAddon } from './migrations';
import { createPool, ping } from '@dam/db';
import { runTesseract, tesseractReady } from './adapters/tesseract';
import { buildAddonApp } from './app';
import { loadAddonConfig } from './config';
import { addonJobWorker } from './consumers/addon-jobs.consumer';

// As in conversion: a full mark every few seconds put 20-40 ms of marking steps into a job's detection now and then.
collectGarbageInFewFullPauses();

async function main(): Promise<void> {
  const config = loadAddonConfig();
  const logger = createLogger({ service: 'addon', level: config.LOG_LEVEL });
  const nc = await connectNats(config.NATS_URL, 'addon', config.NATS_NKEY_SEED);
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const storage = createStorage(storageConfigFromEnv(config));
  // The OCR engine is a Debian package: without it, /readyz says so and text extraction jobs fail with the reason.
  const ocrReady = await tesseractReady(config.TESSERACT_PATH, config.OCR_LANGUAGE);
  if (!ocrReady)
    logger.error(
      { path: config.TESSERACT_PATH, language: config.OCR_LANGUAGE },
      'tesseract with its language data is not installed: text_extraction cannot run',
    );

  const pool = createPool(config);
  const applied = await migrateAddon(pool);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  // The models load once, in the background, while the service already takes jobs: a job that needs a model waits
  // for it (under the job's keep-alive), and a start is never held back by a slow machine. /readyz reports each
  // addon's state in `models` without being decided by it; jobs fail with the reason when a model could not load
  // (the service itself keeps running).
  // What metadata is told when asked (a failed model makes a run request answer 503 with the reason).
  const status: Record<string, AddonState> = {
    text_extraction: ocrReady ? { state: 'ready' } : { state: 'failed', reason: `tesseract with the ${config.OCR_LANGUAGE} language is not installed` },
    auto_tagging: { state: 'loading' },
    face_recognition: { state: 'loading' },
    background_removal: { state: 'ready' },
  };
  const load = <T>(addon: string, loading: () => Promise<T>): Promise<T> => {
    const models = loading();
    models.then(
      () => {
        status[addon] = { state: 'ready' };
        logger.info({ addon }, 'models loaded');
      },
      (error: unknown) => {
        status[addon] = { state: 'failed', reason: `the ${addon} model could not load: ${error instanceof Error ? error.message : String(error)}` };
        logger.error({ err: error, addon }, 'models could not load: the addon cannot run');
      },
    );
    return models;
  };
  serveAddonStatus(nc, () => status); // ends with the connection's drain
  // One after the other: models loading at once on two cores gain nothing.
  const objectModels = load('auto_tagging', () => HumanModels.load('objects'));
  const faceModels = objectModels.catch(() => undefined).then(() => load('face_recognition', () => HumanModels.load('faces')));
  // ISNet holds about 600 MB: it loads at the first background removal, not at start (a deployment that never
  // removes a background never pays for it); its files are checked now, so a missing model is known at once.
  const missing = BackgroundRemoval.missing();
  if (missing) status.background_removal = { state: 'failed', reason: missing };
  let backgroundModel: Promise<BackgroundRemoval> | undefined;
  const background = (): Promise<BackgroundRemoval> =>
    (backgroundModel ??= missing
      ? Promise.reject(new Error(missing))
      : load('background_removal', () => BackgroundRemoval.load(config.BACKGROUND_REMOVAL_MODEL)));

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: {
      postgres: () => ping(pool),
      s3: () => storage.reachable(),
    },
    degradedChecks: { nats: () => natsReachable(nc) },
    workers: [
      addonJobWorker(
        {
          js: jetstream(nc),
          storage,
          readOriginal: originalReader(
            storage,
            cachedOriginals((key) => storage.getBuffer(key), { maxBytes: config.ORIGINALS_CACHE_BYTES, ttlMs: config.ORIGINALS_CACHE_TTL_MS }),
            { inMemoryBytes: config.ORIGINALS_IN_MEMORY_BYTES, maxBytes: config.MAX_ORIGINAL_BYTES },
          ),
          logger,
          maxInputPixels: config.MAX_INPUT_PIXELS,
          maxDecodePixels: config.MAX_DECODE_PIXELS,
          ocrMaxPixels: config.OCR_MAX_PIXELS,
          ocr: (png) => runTesseract(png, { path: config.TESSERACT_PATH, language: config.OCR_LANGUAGE, timeoutMs: config.OCR_TIMEOUT_MS }),
          objects: () => objectModels,
          minConfidence: config.TAGGING_MIN_CONFIDENCE,
          faces: () => faceModels,
          people: new PeopleRepository(pool),
          faceMatchThreshold: config.FACE_MATCH_THRESHOLD,
          background,
        },
        jobRuntime(nc, config, logger, { concurrency: config.CONCURRENCY }),
      ),
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
      { name: 'postgres', close: () => pool.end() },
    ],
    app: (readiness) => buildAddonApp({ logger, readiness, models: () => ({ ...status }) }),
  });
}

runMain(main);
