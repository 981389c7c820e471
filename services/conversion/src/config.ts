import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, loadConfig, natsEnv, s3Env, serviceUrl } from '@dam/config';
import { DEFAULT_MAX_INPUT_PIXELS } from './adapters/image-processor';

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

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
  ACK_WAIT_MS: positiveInt(30_000),
  /** How often a running job renews its lease at metadata (keep it under a third of metadata's JOB_LEASE_MS). */
  JOB_HEARTBEAT_MS: positiveInt(10_000),
  /** Deliveries of one job command before the job is reported as failed. */
  MAX_DELIVER: positiveInt(5),
  /** Delays before redelivery after the 1st, 2nd, ... failure; the last repeats. */
  RETRY_BACKOFF_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be a comma-separated list of milliseconds')
    .default('1000,5000,30000')
    .transform((s) => s.split(',').map(Number)),
  MAX_INPUT_PIXELS: positiveInt(DEFAULT_MAX_INPUT_PIXELS),
  MAX_OUTPUT_PIXELS: positiveInt(64 * 1024 * 1024),
  SETTINGS_CACHE_MS: z.coerce.number().int().nonnegative().default(30_000),
});

export type ConversionConfig = z.infer<typeof configSchema>;

export const loadConversionConfig = (env: NodeJS.ProcessEnv = process.env): ConversionConfig => loadConfig(configSchema, env);
