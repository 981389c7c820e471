import { z } from 'zod';
import { serviceKeyEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, edgeLimitEnv, jwtEnv, loadConfig, natsEnv, positiveInt, serviceUrl } from '@dam/config';

const schema = z
  .object({
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
    /**
     * Idempotency-Key (CONTRACT §13): the kept responses, shared by every replica, in its own database (table
     * idempotency_keys, migrated at start). Without it (development, tests) they are kept in this process only;
     * NODE_ENV=production requires it.
     */
    DATABASE_URL: dbEnv.DATABASE_URL.optional(),
    DB_POOL_MAX: dbEnv.DB_POOL_MAX,
    /** How often expired Idempotency-Key responses are removed from the database. */
    IDEMPOTENCY_SWEEP_INTERVAL_MS: positiveInt(10 * 60_000),
    /** `api_requests` usage records go to NATS (CONTRACT §9); without NATS_URL the gateway counts nothing. */
    NATS_URL: z.string().min(1).optional(),
    NATS_NKEY_SEED: natsEnv.NATS_NKEY_SEED,
    /**
     * Get Data answers kept between metadata's notices of changed assets (issue 33; needs NATS_URL): the longest an
     * answer is kept if a notice were lost (0: nothing kept, every Get Data asks metadata), and the bytes kept in all.
     */
    READ_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
    READ_CACHE_MAX_BYTES: positiveInt(32 * 1024 * 1024),
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
  })
  .refine((c) => c.NODE_ENV !== 'production' || c.DATABASE_URL !== undefined, {
    path: ['DATABASE_URL'],
    message: 'must be set when NODE_ENV=production: Idempotency-Key responses are shared by every replica through it',
  });

export type GatewayConfig = z.infer<typeof schema>;

export const loadGatewayConfig = (env: NodeJS.ProcessEnv = process.env): GatewayConfig => loadConfig(schema, env);
