import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';
import { DEFAULT_MAX_INPUT_PIXELS } from './adapters/image-processor';

export const configSchema = z.object({
  ...baseEnv(8093),
  ...natsEnv,
  ...s3Env,
  ...serviceKeyEnv('conversion'),
  ...trustedKeysEnv,
  AUTH_URL: serviceUrl(8090),
  /**
   * Images converted at once by this process (each uses one libvips thread). Twice the cores of a small machine:
   * while one job waits on storage or NATS another keeps the core busy.
   */
  CONCURRENCY: positiveInt(4),
  ...jobWorkerEnv,
  MAX_INPUT_PIXELS: positiveInt(DEFAULT_MAX_INPUT_PIXELS),
  /** Pixels of one output; an on-demand transform counts every frame of an animated result (400 over it). */
  MAX_OUTPUT_PIXELS: positiveInt(64 * 1024 * 1024),
  /**
   * On-demand transforms made at once by this process, besides the CONCURRENCY jobs: one more answers 503 with
   * Retry-After instead of queueing (any reader picks the size, so queued work would be unbounded).
   */
  TRANSFORM_CONCURRENCY: positiveInt(2),
  /** The Retry-After of a transform refused because every slot is taken (seconds). */
  TRANSFORM_RETRY_AFTER_SECONDS: positiveInt(2),
  /** Transforms kept stored per asset (each w/h/fit/q/format is one object): a new one evicts the oldest. */
  MAX_TRANSFORM_VARIANTS: positiveInt(50),
});

export type ConversionConfig = z.infer<typeof configSchema>;

export const loadConversionConfig = (env: NodeJS.ProcessEnv = process.env): ConversionConfig => loadConfig(configSchema, env);
