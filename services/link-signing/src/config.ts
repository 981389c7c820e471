import { z } from 'zod';
import { baseEnv, loadConfig } from '@dam/config';

// Only the common variables for now: the service has no adapters yet.
export const configSchema = z.object({ ...baseEnv(8082) });

export type LinkSigningConfig = z.infer<typeof configSchema>;

export const loadLinkSigningConfig = (env: NodeJS.ProcessEnv = process.env): LinkSigningConfig => loadConfig(configSchema, env);
