import { z } from 'zod';
import { trustProxyProblem } from './trust-proxy';

export { parseTrustProxy, trustProxyProblem, type TrustProxy } from './trust-proxy';

/** Thrown once at start-up, listing every bad variable, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses a service's environment. Besides the schema, the variables every service's HTTP app reads from the
 * environment itself (`TRUST_PROXY`, see createHttpApp in @dam/http) are checked here, so a bad one stops the
 * start in the same list.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  const trustProxy = trustProxyProblem(env);
  if (result.success && !trustProxy) return result.data;
  const problems = result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
  if (trustProxy) problems.push(trustProxy);
  throw new ConfigError(problems);
}

/** A whole number above zero (a count, a size, a duration in ms), `fallback` when unset. */
export const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

export const env = { port, bool };

export const baseEnv = (defaultPort: number) => ({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().default('127.0.0.1'),
  PORT: port(defaultPort),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SHUTDOWN_TIMEOUT_MS: positiveInt(10000),
});

/** One NATS server, or several as a comma-separated list (the nodes of a cluster: any of them will do). */
const natsUrls = z.string().refine((v) => v.split(',').every((s) => s.trim().length > 0), 'must be a NATS server URL or a comma-separated list of them');

export const natsEnv = {
  /** `nats://a:4222,nats://b:4222,...`: the client connects to one and reconnects to another when it goes away. */
  NATS_URL: natsUrls.default('nats://127.0.0.1:4222'),
  /** The service's own NATS nkey seed (`SU...`); the server knows only its public key and permissions. */
  NATS_NKEY_SEED: z
    .string()
    .regex(/^SU[A-Z2-7]{56}$/, 'must be a NATS user nkey seed (SU...)')
    .optional(),
  /**
   * Replicas of the streams and KV buckets a service creates (metadata the suite's streams, upload its pending
   * journal): 1 on a single server, 3 (or 5) on a JetStream cluster. Existing ones are scaled to it at start-up.
   */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * The bytes the suite's streams and KV buckets may hold on each NATS server, one budget split between them
   * (STREAM_BYTE_SHARES and KV_BUCKET_BYTE_SHARES of @dam/events) into each one's `max_bytes`: metadata sizes the
   * streams, every service the buckets it opens. Below JetStream's max_file_store (it reserves them up front). Unset:
   * no limits.
   */
  NATS_STREAMS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .optional(),
};

const POOL_MAX_MESSAGE = 'must be a whole number from 1 to 100 (connections of this process to PostgreSQL)';

export const dbEnv = {
  /** TLS: `?sslmode=verify-full&sslrootcert=/etc/dam/db-ca/ca.crt` (docs/operations.md, "Database TLS"). */
  DATABASE_URL: z.string().url(),
  /**
   * The most connections this process opens (pg's Pool `max`). Every replica of every service that owns a database
   * holds up to this many: their sum at the most replicas must stay under the server's `max_connections`.
   */
  DB_POOL_MAX: z.coerce
    .number({ error: POOL_MAX_MESSAGE })
    .int({ error: POOL_MAX_MESSAGE })
    .min(1, { error: POOL_MAX_MESSAGE })
    .max(100, { error: POOL_MAX_MESSAGE })
    .default(10),
};

/** Every reader of group settings (GroupSettingsClient): how long they are kept. */
export const groupSettingsEnv = {
  /**
   * How long a group's settings are reused without auth's notices (NATS down). 0 (default): they are read fresh
   * then, so a settings change applies to the very next upload; a cache spares auth, and delays changes by as much.
   */
  SETTINGS_CACHE_MS: z.coerce.number().int().nonnegative().default(0),
  /**
   * While the service hears auth's settings notices (NATS connected), a group's settings are reused until the
   * group's next notice, and at most this long (a bound on a notice lost anyway); 0 reads them fresh every time.
   */
  SETTINGS_MAX_AGE_MS: z.coerce.number().int().nonnegative().default(300_000),
};

/**
 * A job worker's consumer (conversion, transcode): how long a job may go without `working()` before NATS hands
 * it out again, how often it tells metadata it is alive (keep it under a third of metadata's JOB_LEASE_MS),
 * deliveries before the job is reported failed, and the delays between them (the last repeats).
 */
export const jobWorkerEnv = {
  ACK_WAIT_MS: positiveInt(30_000),
  JOB_HEARTBEAT_MS: positiveInt(10_000),
  /** Least time between two progress reports of one job (each is a transaction in metadata); 0 reports every change. */
  JOB_PROGRESS_INTERVAL_MS: z.coerce.number().int().nonnegative().default(500),
  /**
   * How long a job runs before its worker tells metadata it started (IN_PROGRESS); a job done sooner sends only its
   * end. 0 reports the start at once.
   */
  JOB_START_REPORT_DELAY_MS: z.coerce.number().int().nonnegative().default(1000),
  MAX_DELIVER: positiveInt(5),
  RETRY_BACKOFF_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be a comma-separated list of milliseconds')
    .default('1000,5000,30000')
    .transform((v) => v.split(',').map(Number)),
  /**
   * How long a job failing only because a dependency is down (PostgreSQL, S3, NATS, a service answering 503) is run
   * again in place before the failure counts as a delivery (see consume() in @dam/events); 0 counts it at once.
   */
  OUTAGE_RETRY_MS: z.coerce.number().int().nonnegative().default(300_000),
  ...groupSettingsEnv,
};

export const s3Env = {
  S3_ENDPOINT: z.string().url().default('http://127.0.0.1:7480'),
  S3_ACCESS_KEY: z.string().min(1),
  S3_SECRET_KEY: z.string().min(1),
  S3_BUCKET: z.string().min(3).default('dam-assets'),
  S3_REGION: z.string().default('us-east-1'),
  /**
   * Where clients reach the S3 API, `http(s)://host[:port]`: `object_storage` links are presigned for this address
   * (Signature V4 covers the host, no proxy can rewrite it). Default S3_ENDPOINT: links that work only in the cluster.
   */
  S3_PUBLIC_ENDPOINT: z
    .string()
    .superRefine((v, ctx) => {
      const u = URL.canParse(v) ? new URL(v) : undefined;
      if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' });
      else if (u.pathname !== '/' || u.search || u.hash || u.username || u.password) {
        ctx.addIssue({ code: 'custom', message: 'must be only scheme, host and port (http(s)://host[:port]): no path, query or credentials' });
      }
    })
    .optional(),
  /** Where clients reach the bucket anonymously (public URLs of Set Public Access); default S3_PUBLIC_ENDPOINT, then S3_ENDPOINT. */
  S3_PUBLIC_URL: z.string().url().optional(),
  /** Sign upload bodies with SHA-256 on plain http: `auto` (default) does when the endpoint is not loopback. */
  S3_SIGN_PAYLOAD: z.enum(['auto', 'true', 'false']).default('auto'),
  /**
   * How long an S3 request may wait for the server to answer or take data before it fails (a hung server, a
   * partition): the request ends 503 instead of hanging. Time the service itself spends reading slowly, or waiting
   * for its own client's bytes, does not count.
   */
  S3_TIMEOUT_MS: positiveInt(30_000),
};

/** The edges and auth verify or sign user JWTs; services behind them never see one. */
export const jwtEnv = {
  /** Signs every new token and verifies it. */
  JWT_SECRET: z.string().min(16, 'must be at least 16 characters'),
  /**
   * The secret before the last rotation: tokens it signed are still accepted until they expire, none is signed with
   * it. Empty is none (`kubectl apply` cannot remove a key from a Secret, so the secrets tool empties it instead).
   */
  JWT_PREVIOUS_SECRET: z
    .string()
    .refine((v) => v === '' || v.length >= 16, 'must be at least 16 characters, or empty')
    .optional()
    .transform((v) => v || undefined),
};

export const serviceUrl = (fallbackPort: number) => z.string().url().default(`http://127.0.0.1:${fallbackPort}`);

/** Over how many replicas an edge's budgets are spread (gateway, upload, the {cdn} edge). */
export const edgeReplicaEnv = {
  /**
   * The budgets are the deployment's totals, shared by this many replicas (each admits its share); with
   * RATE_LIMIT_PEERS, the count until its first lookup answers.
   */
  RATE_LIMIT_REPLICAS: positiveInt(1),
  /** A name whose addresses are the edge's ready replicas (a headless Service): the count, looked up every 15 s. */
  RATE_LIMIT_PEERS: z.string().min(1).optional(),
};

/**
 * The request limits of a public edge (gateway, upload): per principal, per client address before
 * credentials are checked, and failed authentications per address. 0 per minute turns one off.
 */
export const edgeLimitEnv = (defaults: { perMinute: number; burst: number; addressPerMinute: number; addressBurst: number }) => ({
  /** Per caller: user or API key (on the gateway also the address, for login and validate). */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(defaults.perMinute),
  RATE_LIMIT_BURST: positiveInt(defaults.burst),
  /** Every request per client address, counted before credentials are checked. */
  RATE_LIMIT_ADDRESS_PER_MINUTE: z.coerce.number().int().min(0).default(defaults.addressPerMinute),
  RATE_LIMIT_ADDRESS_BURST: positiveInt(defaults.addressBurst),
  /** Failed authentications (bad JWT or API key) per address; beyond them it gets 429 without a lookup. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  AUTH_FAILURES_BURST: positiveInt(100),
  ...edgeReplicaEnv,
});
