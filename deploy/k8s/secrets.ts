/**
 * The Secrets the manifests in k8s/ refer to, freshly generated, as YAML on stdout (never written to the repository):
 *
 *   pnpm --filter @dam/deploy k8s:secrets [--database-url 'postgres://user:pass@host:5432/{db}'] \
 *     [--subscribers subscriber-crm,subscriber-erp] \
 *     [--admin-email E --admin-password P] | kubectl apply -n dam -f -
 *
 * Without --database-url, every service's DATABASE_URL points at the dev overlay's PostgreSQL (`postgres`), with a
 * generated password also put into `dam-postgres`. `{db}` is replaced by each service's database (dam_<service>).
 * The object store: MinIO's root user (`dam-minio`, read by MinIO and the `minio-users` Job only), one user per
 * service that uses the bucket (S3_ACCESS_KEY / S3_SECRET_KEY in its own `dam-<service>`; the Job creates them in
 * MinIO with the policies of deploy/k8s/object-store.ts), and Prometheus' user (`dam-minio-metrics`).
 * Running it again makes new secrets: apply it once, then rotate keys as docs/operations.md describes.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { generateServiceKey } from '@dam/auth-tokens';
import { DEFAULT_SUBSCRIBERS, generateNatsUsers, parseSubscribers, renderNatsAuthorization, type NatsIdentity, type SubscriberIdentity } from '@dam/events';
import { MINIO_METRICS_SECRET, MINIO_ROOT_SECRET, secretKeysOf, SHARED_SECRET_KEYS } from './generate';
import { METRICS_USER } from './object-store';
import { SERVICES, type ServiceSpec } from './services';

export interface SecretOptions {
  databaseUrl?: string;
  /** The outside systems reading asset events, each its own NATS user (`subscriber-<system>`). */
  subscribers?: readonly SubscriberIdentity[];
  adminEmail?: string;
  adminPassword?: string;
}

const token = (bytes = 32): string => randomBytes(bytes).toString('hex');
const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, labels: { 'app.kubernetes.io/part-of': 'dam' } },
  type: 'Opaque',
  stringData: data,
});

/** Every Secret of the suite, generated; `Secret` objects with `stringData`. */
export function generateSecrets(options: SecretOptions = {}): Array<ReturnType<typeof secret>> {
  const pgPassword = token(16);
  const databaseUrl = options.databaseUrl ?? `postgres://dam:${pgPassword}@postgres:5432/{db}`;
  const root = { user: `damroot${token(4)}`, password: token(24) };
  // MinIO takes access keys of up to 20 characters and secret keys of up to 40.
  const s3User = (name: string) => ({ S3_ACCESS_KEY: `${name.replace(/-/g, '')}-${token(3)}`, S3_SECRET_KEY: token(20) });
  const metrics = s3User(METRICS_USER);
  const keys = Object.fromEntries(SERVICES.map((s) => [s.name, generateServiceKey(s.name)]));
  const subscribers = options.subscribers ?? DEFAULT_SUBSCRIBERS;
  const nats = generateNatsUsers(subscribers);
  const seedOf = (identity: NatsIdentity): string => nats.find((u) => u.identity === identity)?.seed as string;
  const own = (s: ServiceSpec): Record<string, string> => {
    const values: Record<string, string> = {
      SERVICE_KEY: JSON.stringify(keys[s.name]?.privateJwk),
      NATS_NKEY_SEED: seedOf(s.name),
      DATABASE_URL: databaseUrl.replace('{db}', `dam_${s.name.replace(/-/g, '_')}`),
      LINK_SIGNING_KEYS: token(32),
      ADMIN_EMAIL: options.adminEmail ?? 'admin@dam.example.com',
      ADMIN_PASSWORD: options.adminPassword ?? token(12),
      ...s3User(s.name),
    };
    return Object.fromEntries(secretKeysOf(s).map((k) => [k, values[k] as string]));
  };
  const shared = {
    JWT_SECRET: token(32),
    SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: Object.values(keys).map((k) => k.publicJwk) }),
  };
  if (Object.keys(shared).join() !== SHARED_SECRET_KEYS.join()) throw new Error('dam-shared does not hold what the manifests read');
  return [
    secret('dam-shared', shared),
    ...SERVICES.map((s) => secret(`dam-${s.name}`, own(s))),
    // The NATS servers' `authorization` block: public keys and each identity's permissions only.
    secret('dam-nats-auth', { 'auth.conf': renderNatsAuthorization(nats) }),
    // Seeds for operators (admin) and each outside system (read-only on ASSET_EVENTS, its one consumer named as itself):
    // hand them out, not to pods.
    secret('dam-nats-operators', {
      NATS_NKEY_SEED_ADMIN: seedOf('admin'),
      ...Object.fromEntries(subscribers.map((s) => [`NATS_NKEY_SEED_${s.toUpperCase().replace(/-/g, '_')}`, seedOf(s)])),
    }),
    secret(MINIO_ROOT_SECRET, { MINIO_ROOT_USER: root.user, MINIO_ROOT_PASSWORD: root.password }),
    // Hand these to whoever makes Prometheus' bearer token (k8s/README.md): they read metrics and nothing else.
    secret(MINIO_METRICS_SECRET, { MINIO_METRICS_ACCESS_KEY: metrics.S3_ACCESS_KEY, MINIO_METRICS_SECRET_KEY: metrics.S3_SECRET_KEY }),
    ...(options.databaseUrl ? [] : [secret('dam-postgres', { POSTGRES_USER: 'dam', POSTGRES_PASSWORD: pgPassword })]),
  ];
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      'database-url': { type: 'string' },
      subscribers: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
    },
  });
  if (values['database-url'] && !values['database-url'].includes('{db}')) {
    console.error('--database-url must contain {db}, replaced by each service\'s database name');
    process.exit(2);
  }
  const objects = generateSecrets({
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    ...(values.subscribers ? { subscribers: parseSubscribers(values.subscribers) } : {}),
    ...(values['admin-email'] ? { adminEmail: values['admin-email'] } : {}),
    ...(values['admin-password'] ? { adminPassword: values['admin-password'] } : {}),
  });
  process.stdout.write(objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
}
