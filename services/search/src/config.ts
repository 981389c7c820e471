import { z } from 'zod';
import { trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, loadConfig, natsEnv } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8092),
  ...dbEnv,
  ...natsEnv,
  ...trustedKeysEnv,
  /** How long a result set can be paged (the contract asks at least 30 minutes). */
  RESULT_SET_TTL_MS: z.coerce
    .number()
    .int()
    .min(30 * 60_000)
    .default(60 * 60_000),
  /** `Sunset` of the deprecated search paths (an HTTP date or ISO 8601); none when unset. */
  SEARCH_SUNSET: z.string().min(1).optional(),
});

export type SearchConfig = z.infer<typeof configSchema>;

export const loadSearchConfig = (env: NodeJS.ProcessEnv = process.env): SearchConfig => loadConfig(configSchema, env);
