import { z } from 'zod';

/** Thrown once at start-up, listing every bad variable, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
  throw new ConfigError(problems);
}

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
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(10000),
});

export const natsEnv = {
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  /** The service's own NATS nkey seed (`SU...`); the server knows only its public key and permissions. */
  NATS_NKEY_SEED: z.string().regex(/^SU[A-Z2-7]{56}$/, 'must be a NATS user nkey seed (SU...)').optional(),
};

export const dbEnv = {
  DATABASE_URL: z.string().url(),
};

export const s3Env = {
  S3_ENDPOINT: z.string().url().default('http://127.0.0.1:7480'),
  S3_ACCESS_KEY: z.string().min(1),
  S3_SECRET_KEY: z.string().min(1),
  S3_BUCKET: z.string().min(3).default('dam-assets'),
  S3_REGION: z.string().default('us-east-1'),
};

/** The edges and auth verify or sign user JWTs; services behind them never see one. */
export const jwtEnv = {
  JWT_SECRET: z.string().min(16, 'must be at least 16 characters'),
};

export const serviceUrl = (fallbackPort: number) => z.string().url().default(`http://127.0.0.1:${fallbackPort}`);
