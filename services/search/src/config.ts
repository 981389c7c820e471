import { z } from 'zod';
import { baseEnv, loadConfig } from '@dam/config';

// Only the common variables for now: the service has no adapters yet.
export const configSchema = z.object({ ...baseEnv(8092) });

export type SearchConfig = z.infer<typeof configSchema>;

export const loadSearchConfig = (env: NodeJS.ProcessEnv = process.env): SearchConfig => loadConfig(configSchema, env);
