import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';
import { DEFAULT_MAX_INPUT_PIXELS } from './adapters/image-processor';
import { concurrencyEnv } from './concurrency';

export const configSchema = z.object({
  ...baseEnv(8093),
  ...natsEnv,
  ...s3Env,
  ...serviceKeyEnv('conversion'),
  ...trustedKeysEnv,
  AUTH_URL: serviceUrl(8090),
  ...concurrencyEnv,
  ...jobWorkerEnv,
  MAX_INPUT_PIXELS: positiveInt(DEFAULT_MAX_INPUT_PIXELS),
  /** Pixels of one output; an on-demand transform counts every frame of an animated result (400 over it). */
  MAX_OUTPUT_PIXELS: positiveInt(64 * 1024 * 1024),
  /**
   * Transforms waiting for a slot (first come first served, nothing decoded while waiting); one more answers 503
   * TRANSFORMS_BUSY with Retry-After at once. 0: no queue, refused whenever every slot is taken.
   */
  TRANSFORM_QUEUE: z.coerce.number().int().min(0).default(16),
  /**
   * The longest one transform waits for a slot before the 503 (ms). Metadata gives the whole transform 60 s
   * (link-signing gives metadata 65 s), so the wait is capped at 30 s to leave the transform itself the rest.
   */
  TRANSFORM_QUEUE_WAIT_MS: z.coerce.number().int().positive().max(30_000).default(10_000),
  /** The Retry-After of a transform refused because every slot and the queue are taken (seconds). */
  TRANSFORM_RETRY_AFTER_SECONDS: positiveInt(2),
  /** Transforms kept stored per asset (each w/h/fit/q/format is one object): a new one evicts the oldest. */
  MAX_TRANSFORM_VARIANTS: positiveInt(50),
});

export type ConversionConfig = z.infer<typeof configSchema>;

export const loadConversionConfig = (env: NodeJS.ProcessEnv = process.env): ConversionConfig => loadConfig(configSchema, env);
