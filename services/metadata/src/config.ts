import { z } from 'zod';
import { trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, loadConfig, natsEnv, s3Env } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8091),
  ...dbEnv,
  ...natsEnv,
  ...s3Env,
  ...trustedKeysEnv,
  /** Conversion reports handled at once. */
  CONVERSIONS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
});

export type MetadataConfig = z.infer<typeof configSchema>;

export const loadMetadataConfig = (env: NodeJS.ProcessEnv = process.env): MetadataConfig => loadConfig(configSchema, env);
