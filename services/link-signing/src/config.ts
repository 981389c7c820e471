import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, edgeReplicaEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8082),
  ...natsEnv,
  ...s3Env,
  ...trustedKeysEnv,
  ...serviceKeyEnv('link-signing'),
  AUTH_URL: serviceUrl(8090),
  METADATA_URL: serviceUrl(8091),
  /** `{cdn}` as clients reach it: the base of every `cdn` link handed out (and of playlist entries). */
  PUBLIC_CDN_URL: z.string().url().default('http://127.0.0.1:8082'),
  /**
   * The keys links are signed with, comma-separated (hex or base64, at least 32 bytes each): the first signs, every
   * one verifies. Rotation: put a new key first, keep the old one second until its links have expired.
   */
  LINK_SIGNING_KEYS: z
    .string()
    .min(1)
    .transform((v, ctx) => {
      const keys = v
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean)
        .map((k) => (/^[0-9a-f]+$/i.test(k) ? Buffer.from(k, 'hex') : Buffer.from(k, 'base64')));
      if (keys.length === 0 || keys.length > 2 || keys.some((k) => k.length < 32)) {
        ctx.addIssue({ code: 'custom', message: 'one or two keys of at least 32 bytes each (hex or base64), comma-separated' });
        return z.NEVER;
      }
      return keys;
    }),
  /** The edge's byte cache on local disk: its folder (emptied at start) and its size. */
  CDN_CACHE_DIR: z.string().min(1).optional(),
  CDN_CACHE_MAX_BYTES: positiveInt(2 * 1024 ** 3),
  /** Objects larger than this are streamed through, never cached (default: a quarter of the cache). */
  CDN_CACHE_MAX_OBJECT_BYTES: z.coerce.number().int().positive().optional(),
  /**
   * `{cdn}`'s request budget per client address (X-Forwarded-For believed only from TRUST_PROXY's hops), spent by
   * every request of the edge before its link is checked; beyond it 429 with Retry-After. Generous: a page of
   * thumbnails or a video player's segments stay far below it. 0 per minute turns it off.
   */
  CDN_RATE_LIMIT_ADDRESS_PER_MINUTE: z.coerce.number().int().min(0).default(6000),
  CDN_RATE_LIMIT_ADDRESS_BURST: positiveInt(1000),
  // The budget above is the deployment's total, each replica admitting its share (RATE_LIMIT_REPLICAS, RATE_LIMIT_PEERS).
  ...edgeReplicaEnv,
  /**
   * How long auth's answer about a link's accessID is reused by the edge: the longest a link still works after
   * its accessID was rotated or its user disabled. 0 asks auth on every request.
   */
  CDN_ACCESS_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5000),
  /**
   * CONTRACT §15: the longest any cache may keep a `{cdn}` answer (seconds; less when the link expires sooner): how
   * long a revoked link or a replaced original may still be served downstream of the edge.
   */
  CDN_MAX_AGE: z.coerce.number().int().min(0).max(86_400).default(300),
  /**
   * The nginx cache tiers in front of `{cdn}` (deploy/cache): their purge endpoints, comma-separated
   * (`http://dam-cdn-cache-purge:8081/purge`; a name stands for every address it resolves to, one per replica).
   * Empty: no tier is told anything.
   */
  CDN_TIER_PURGE_URLS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().url())),
  /** How often the bytes served are published for usage (cdn_bytes). */
  USAGE_FLUSH_MS: positiveInt(10_000),
  /** CDN prefetch and purge jobs: acknowledgement, deliveries, heartbeat. */
  ...jobWorkerEnv,
});

export type LinkSigningConfig = z.infer<typeof configSchema>;

export const loadLinkSigningConfig = (env: NodeJS.ProcessEnv = process.env): LinkSigningConfig => loadConfig(configSchema, env);
