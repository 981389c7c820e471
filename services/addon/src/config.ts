import { z } from 'zod';
import { baseEnv, loadConfig } from '@dam/config';

// Only the common variables for now: the service has no adapters yet.
export const configSchema = z.object({ ...baseEnv(8095) });

export type AddonConfig = z.infer<typeof configSchema>;

export const loadAddonConfig = (env: NodeJS.ProcessEnv = process.env): AddonConfig => loadConfig(configSchema, env);
