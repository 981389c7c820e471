import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, serviceUrl } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8096),
  ...dbEnv,
  ...natsEnv,
  ...serviceKeyEnv('webhook'),
  ...trustedKeysEnv,
  ...jobWorkerEnv,
  AUTH_URL: serviceUrl(8090),
  /** Hosts a webhook URL may name despite the outbound guard, plain http included (CONTRACT §11). */
  WEBHOOK_ALLOW_HOSTS: z.string().default(''),
  /**
   * The wait before each attempt (CONTRACT §10): the first at once, then 10 s, 1 min, 5 min, 15 min, 45 min, 2 h
   * and 5 h after the previous one; eight attempts in all. Tests compress it.
   */
  WEBHOOK_RETRY_DELAYS_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be a comma-separated list of milliseconds')
    .default('0,10000,60000,300000,900000,2700000,7200000,18000000')
    .transform((v) => v.split(',').map(Number)),
  /** No answer within this counts as a failed attempt (CONTRACT §10: 15 s). */
  WEBHOOK_TIMEOUT_MS: positiveInt(15_000),
  /** Deliveries in flight in this process, and to one URL (a slow receiver holds only its own slots). */
  WEBHOOK_CONCURRENCY: positiveInt(32),
  WEBHOOK_PER_URL_CONCURRENCY: positiveInt(4),
  /**
   * Deliveries in flight in this process for one group, over all its URLs (up to 10, each with its per-URL slots):
   * a tenant whose receivers never answer holds at most these, the other groups the rest.
   */
  WEBHOOK_PER_GROUP_CONCURRENCY: positiveInt(8),
  /** How often due deliveries are looked for (a new event also wakes the dispatcher at once). */
  DISPATCH_INTERVAL_MS: positiveInt(500),
  /** How long the event log keeps events for reissues (ASSET_EVENTS keeps 30 days). */
  EVENT_LOG_DAYS: positiveInt(31),
});

export type WebhookConfig = z.infer<typeof configSchema>;

export const loadWebhookConfig = (env: NodeJS.ProcessEnv = process.env): WebhookConfig => loadConfig(configSchema, env);
