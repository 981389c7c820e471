import { z } from 'zod';
import { baseEnv, loadConfig } from '@dam/config';

// Only the common variables for now: the service has no adapters yet.
export const configSchema = z.object({ ...baseEnv(8094) });

export type TranscodeConfig = z.infer<typeof configSchema>;

export const loadTranscodeConfig = (env: NodeJS.ProcessEnv = process.env): TranscodeConfig => loadConfig(configSchema, env);
