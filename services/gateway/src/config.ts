import { z } from 'zod';
import { serviceKeyEnv } from '@dam/auth-tokens';
import { baseEnv, edgeLimitEnv, jwtEnv, loadConfig, natsEnv, positiveInt, serviceUrl } from '@dam/config';

const schema = z.object({
  ...baseEnv(8080),
  ...jwtEnv,
  ...serviceKeyEnv('gateway'),
  /** How long the edge reuses a JWT user's status from auth: the delay before disabling a user applies. */
  USER_STATUS_TTL_MS: z.coerce.number().int().min(0).default(10_000),
  AUTH_URL: serviceUrl(8090),
  METADATA_URL: serviceUrl(8091),
  SEARCH_URL: serviceUrl(8092),
  LINK_SIGNING_URL: serviceUrl(8082),
  WEBHOOK_URL: serviceUrl(8096),
  /** `api_requests` usage records go to NATS (CONTRACT §9); without NATS_URL the gateway counts nothing. */
  NATS_URL: z.string().min(1).optional(),
  NATS_NKEY_SEED: natsEnv.NATS_NKEY_SEED,
  NATS_STREAM_REPLICAS: natsEnv.NATS_STREAM_REPLICAS,
  /** The JetStream budget its IDEMPOTENCY bucket takes its share of (KV_BUCKET_BYTE_SHARES). */
  NATS_STREAMS_MAX_BYTES: natsEnv.NATS_STREAMS_MAX_BYTES,
  /** How often the counted requests are published, one record per group and user. */
  USAGE_FLUSH_MS: positiveInt(10_000),
  /** Idle time on an upstream socket before the request is abandoned (503 if nothing was sent yet). */
  UPSTREAM_TIMEOUT_MS: positiveInt(60_000),
  /** The same for the object store, when the gateway streams an object's bytes itself (downloads): as S3_TIMEOUT_MS elsewhere. */
  S3_TIMEOUT_MS: positiveInt(30_000),
  /** `{upload}` and `{cdn}` as browsers reach them: the console's config.json and its Content-Security-Policy. */
  PUBLIC_UPLOAD_URL: z.string().url().default('http://127.0.0.1:8081'),
  PUBLIC_CDN_URL: z.string().url().default('http://127.0.0.1:8082'),
  /** The built web console (default: web/console/dist of this checkout). */
  CONSOLE_DIR: z.string().min(1).optional(),
  ...edgeLimitEnv({ perMinute: 1200, burst: 200, addressPerMinute: 6000, addressBurst: 600 }),
});

export type GatewayConfig = z.infer<typeof schema>;

export const loadGatewayConfig = (env: NodeJS.ProcessEnv = process.env): GatewayConfig => loadConfig(schema, env);
