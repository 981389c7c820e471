import { telemetry } from './instrument'; // must stay the first import
import { jetstream } from '@nats-io/jetstream';
import { createServiceSigner } from '@dam/auth-tokens';
import { connectNats, DAM_INTERNAL, natsReachable, waitForStreams, followSettingsChanges } from '@dam/events';
import { jobRuntime } from '@dam/jobs';
import { runMain, runService } from '@dam/http';
import { groupSettingsClient } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { Ffmpeg, resolveTools } from '@dam/media';
import { metadataWatermarkSource } from './adapters/watermark-source';
import { buildTranscodeApp } from './app';
import { loadTranscodeConfig } from './config';
import { transcodeJobWorker } from './consumers/job-command.consumer';

async function main(): Promise<void> {
  const config = loadTranscodeConfig();
  const logger = createLogger({ service: 'transcode', level: config.LOG_LEVEL });
  const tools = await resolveTools({ ffmpeg: config.FFMPEG_PATH, ffprobe: config.FFPROBE_PATH });
  logger.info({ ffmpeg: tools.ffmpeg, ffprobe: tools.ffprobe, from: tools.from }, 'media tools');
  const ffmpeg = new Ffmpeg(tools, config.FFMPEG_STALL_MS);

  const nc = await connectNats(config.NATS_URL, 'transcode', config.NATS_NKEY_SEED);
  await waitForStreams(nc, [DAM_INTERNAL], { onWait: (missing) => logger.info({ missing }, 'waiting for streams') });
  const storage = createStorage(storageConfigFromEnv(config));
  const signer = createServiceSigner(config.SERVICE_KEY);

  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    checks: { s3: () => storage.reachable() },
    degradedChecks: { nats: () => natsReachable(nc) },
    // Stopping pulls no more; a running transcode finishes (or its job is handed out again after a kill).
    workers: [
      transcodeJobWorker(
        {
          js: jetstream(nc),
          logger,
          storage,
          ffmpeg,
          settings: groupSettingsClient(config, signer, followSettingsChanges(nc)),
          watermarkSource: metadataWatermarkSource({ metadataUrl: config.METADATA_URL, signer }),
          encoder: { preset: config.X264_PRESET, crf: config.X264_CRF, segmentSeconds: config.HLS_SEGMENT_SECONDS, threads: config.FFMPEG_THREADS },
          clipSeconds: config.CLIP_PREVIEW_SECONDS,
          ...(config.WORK_DIR ? { workDir: config.WORK_DIR } : {}),
        },
        jobRuntime(nc, config, logger, { concurrency: config.CONCURRENCY }),
      ),
    ],
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      { name: 'nats', close: () => nc.drain() },
    ],
    app: (readiness) => buildTranscodeApp({ logger, readiness }),
  });
}

runMain(main);
