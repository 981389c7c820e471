import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, jwtEnv, loadConfig, natsEnv, positiveInt, serviceUrl } from '@dam/config';

const DEFAULT_ADMIN_EMAIL = 'admin@example.com';
const DEFAULT_ADMIN_PASSWORD = 'admin-password';

const schema = z
  .object({
    ...baseEnv(8090),
    ...dbEnv,
    ...jwtEnv,
    ...trustedKeysEnv,
    ...serviceKeyEnv('auth'),
    METADATA_URL: serviceUrl(8091),
    /**
     * Usage statistics (CONTRACT §9) are counted from the usage records on NATS (`dam.internal.usage.*`); without
     * NATS_URL, auth answers usage queries but counts nothing new.
     */
    NATS_URL: z.string().min(1).optional(),
    NATS_NKEY_SEED: natsEnv.NATS_NKEY_SEED,
    /** Replicas and byte limit (its share of the budget) of the KV bucket of used service tokens, as the others read them. */
    NATS_STREAM_REPLICAS: natsEnv.NATS_STREAM_REPLICAS,
    NATS_STREAMS_MAX_BYTES: natsEnv.NATS_STREAMS_MAX_BYTES,
    /** Hosts a webhook URL may name despite the outbound guard, plain http included (CONTRACT §11). */
    WEBHOOK_ALLOW_HOSTS: z.string().default(''),
    JWT_TTL: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86400)
      .default(3600),
    ADMIN_EMAIL: z.email().default(DEFAULT_ADMIN_EMAIL),
    ADMIN_PASSWORD: z.string().min(8).default(DEFAULT_ADMIN_PASSWORD),
    /**
     * Failed logins of one email from all addresses in a window (a loose bound) before its logins are held
     * LOGIN_BOUND_DELAY_MS; past it a wrong password answers 429, a right one still logs in.
     */
    LOGIN_MAX_FAILURES_PER_EMAIL: positiveInt(100),
    /** The same for failed logins from one address (an IPv6 client: its /64) across all emails. */
    LOGIN_MAX_FAILURES_PER_ADDRESS: positiveInt(50),
    /** How long a login past either bound is held before its password is checked (at most 10 s). */
    LOGIN_BOUND_DELAY_MS: z.coerce.number().int().min(0).max(10_000).default(2000),
    LOGIN_WINDOW_SECONDS: positiveInt(900),
    /**
     * Failures of one (email, address) before its next attempt waits 1 s, then twice as long after each further
     * failure, up to LOGIN_MAX_DELAY_SECONDS; the pair is forgotten after a quiet LOGIN_WINDOW_SECONDS past its
     * last delay, or at once by a successful login from that address.
     */
    LOGIN_FREE_FAILURES: z.coerce.number().int().min(0).default(3),
    LOGIN_MAX_DELAY_SECONDS: positiveInt(900),
    /** Login's notifications (messages since the last login) are deleted after this many days, seen or not. */
    NOTIFICATION_RETENTION_DAYS: z.coerce.number().int().positive().max(3650).default(30),
  })
  .superRefine((c, ctx) => {
    // Shipping the documented defaults to production would hand out the admin account.
    if (c.NODE_ENV === 'production' && (c.ADMIN_EMAIL === DEFAULT_ADMIN_EMAIL || c.ADMIN_PASSWORD === DEFAULT_ADMIN_PASSWORD)) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_EMAIL'],
        message: 'ADMIN_EMAIL and ADMIN_PASSWORD must be set to non-default values when NODE_ENV=production',
      });
    }
  });

export type AuthConfig = z.infer<typeof schema>;

export const loadAuthConfig = (env: NodeJS.ProcessEnv = process.env): AuthConfig => loadConfig(schema, env);

export const isDefaultAdmin = (c: Pick<AuthConfig, 'ADMIN_EMAIL' | 'ADMIN_PASSWORD'>): boolean =>
  c.ADMIN_EMAIL === DEFAULT_ADMIN_EMAIL && c.ADMIN_PASSWORD === DEFAULT_ADMIN_PASSWORD;
