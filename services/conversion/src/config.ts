import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, jobWorkerEnv, loadConfig, natsEnv, s3Env, serviceUrl } from '@dam/config';
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
  ...jobWorkerEnv,
  MAX_INPUT_PIXELS: positiveInt(DEFAULT_MAX_INPUT_PIXELS),
  MAX_OUTPUT_PIXELS: positiveInt(64 * 1024 * 1024),
});

export type ConversionConfig = z.infer<typeof configSchema>;

export const loadConversionConfig = (env: NodeJS.ProcessEnv = process.env): ConversionConfig => loadConfig(configSchema, env);
