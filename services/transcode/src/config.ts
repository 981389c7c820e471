import { z } from 'zod';
import { serviceKeyEnv } from '@dam/auth-tokens';
import { baseEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8094),
  ...natsEnv,
  ...s3Env,
  ...serviceKeyEnv('transcode'),
  AUTH_URL: serviceUrl(8090),
  METADATA_URL: serviceUrl(8091),
  /**
   * The system's ffmpeg and ffprobe by default (Debian's); any path to other builds. When they do not run, the
   * npm installer packages (`@ffmpeg-installer/ffmpeg`, `@ffprobe-installer/ffprobe`) are used if installed.
   */
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe'),
  /** x264 preset: `veryfast` suits few cores; slower presets give smaller files for more time. */
  X264_PRESET: z.enum(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium', 'slow', 'slower', 'veryslow']).default('veryfast'),
  X264_CRF: z.coerce.number().int().min(0).max(51).default(23),
  /** Encoder threads per ffmpeg process (0: ffmpeg's choice, every core). */
  FFMPEG_THREADS: z.coerce.number().int().nonnegative().default(0),
  /** An ffmpeg or ffprobe that prints nothing for this long is killed and the job fails with that reason. */
  FFMPEG_STALL_MS: positiveInt(5 * 60_000),
  HLS_SEGMENT_SECONDS: positiveInt(4),
  CLIP_PREVIEW_SECONDS: positiveInt(6),
  /** Videos transcoded at once: one ffmpeg already uses every core, so 1 keeps two cores from being oversubscribed. */
  CONCURRENCY: positiveInt(1),
  ...jobWorkerEnv,
  /** Where originals and outputs are spooled while a job runs (default the system's temporary directory). */
  WORK_DIR: z.string().min(1).optional(),
});

export type TranscodeConfig = z.infer<typeof configSchema>;

export const loadTranscodeConfig = (env: NodeJS.ProcessEnv = process.env): TranscodeConfig => loadConfig(configSchema, env);
