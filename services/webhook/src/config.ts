import { z } from 'zod';
import { baseEnv, loadConfig } from '@dam/config';

// Only the common variables for now: the service has no adapters yet.
export const configSchema = z.object({ ...baseEnv(8096) });

export type WebhookConfig = z.infer<typeof configSchema>;

export const loadWebhookConfig = (env: NodeJS.ProcessEnv = process.env): WebhookConfig => loadConfig(configSchema, env);
