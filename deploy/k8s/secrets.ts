/**
 * The Secrets the manifests in k8s/ refer to, freshly generated, as YAML on stdout (never written to the repository):
 *
 *   pnpm --filter @dam/deploy k8s:secrets [--database-url 'postgres://user:pass@host:5432/{db}'] \
 *     [--s3-access-key KEY --s3-secret-key SECRET] [--admin-email E --admin-password P] | kubectl apply -n dam -f -
 *
 * Without --database-url, every service's DATABASE_URL points at the dev overlay's PostgreSQL (`postgres`), with a
 * generated password also put into `dam-postgres`. `{db}` is replaced by each service's database (dam_<service>).
 * Without S3 keys, the services use MinIO's root user (dev); in production create a user with a policy on the
 * bucket only (docs/operations.md, "Kubernetes") and pass its keys.
 * Running it again makes new secrets: apply it once, then rotate keys as docs/operations.md describes.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { generateServiceKey } from '@dam/auth-tokens';
import { generateNatsUsers, renderNatsAuthorization, type NatsIdentity } from '@dam/events';
import { secretKeysOf, SHARED_SECRET_KEYS } from './generate';
import { SERVICES, type ServiceSpec } from './services';

export interface SecretOptions {
  databaseUrl?: string;
  s3AccessKey?: string;
  s3SecretKey?: string;
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
  const s3 = { access: options.s3AccessKey ?? root.user, secret: options.s3SecretKey ?? root.password };
  const keys = Object.fromEntries(SERVICES.map((s) => [s.name, generateServiceKey(s.name)]));
  const nats = generateNatsUsers();
  const seedOf = (identity: NatsIdentity): string => nats.find((u) => u.identity === identity)?.seed as string;
  const own = (s: ServiceSpec): Record<string, string> => {
    const values: Record<string, string> = {
      SERVICE_KEY: JSON.stringify(keys[s.name]?.privateJwk),
      NATS_NKEY_SEED: seedOf(s.name),
      DATABASE_URL: databaseUrl.replace('{db}', `dam_${s.name.replace(/-/g, '_')}`),
      LINK_SIGNING_KEYS: token(32),
      ADMIN_EMAIL: options.adminEmail ?? 'admin@dam.example.com',
      ADMIN_PASSWORD: options.adminPassword ?? token(12),
    };
    return Object.fromEntries(secretKeysOf(s).map((k) => [k, values[k] as string]));
  };
  const shared = {
    JWT_SECRET: token(32),
    SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: Object.values(keys).map((k) => k.publicJwk) }),
    S3_ACCESS_KEY: s3.access,
    S3_SECRET_KEY: s3.secret,
  };
  if (Object.keys(shared).join() !== SHARED_SECRET_KEYS.join()) throw new Error('dam-shared does not hold what the manifests read');
  return [
    secret('dam-shared', shared),
    ...SERVICES.map((s) => secret(`dam-${s.name}`, own(s))),
    // The NATS servers' `authorization` block: public keys and each identity's permissions only.
    secret('dam-nats-auth', { 'auth.conf': renderNatsAuthorization(nats) }),
    // Seeds for operators (admin) and outside subscribers (read-only on ASSET_EVENTS): hand them out, not to pods.
    secret('dam-nats-operators', { NATS_NKEY_SEED_ADMIN: seedOf('admin'), NATS_NKEY_SEED_SUBSCRIBER: seedOf('subscriber') }),
    secret('dam-minio', { MINIO_ROOT_USER: root.user, MINIO_ROOT_PASSWORD: root.password }),
    ...(options.databaseUrl ? [] : [secret('dam-postgres', { POSTGRES_USER: 'dam', POSTGRES_PASSWORD: pgPassword })]),
  ];
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      'database-url': { type: 'string' },
      's3-access-key': { type: 'string' },
      's3-secret-key': { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
    },
  });
  if (values['database-url'] && !values['database-url'].includes('{db}')) {
    console.error('--database-url must contain {db}, replaced by each service\'s database name');
    process.exit(2);
  }
  if (Boolean(values['s3-access-key']) !== Boolean(values['s3-secret-key'])) {
    console.error('--s3-access-key and --s3-secret-key go together');
    process.exit(2);
  }
  const objects = generateSecrets({
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    ...(values['s3-access-key'] ? { s3AccessKey: values['s3-access-key'] } : {}),
    ...(values['s3-secret-key'] ? { s3SecretKey: values['s3-secret-key'] } : {}),
    ...(values['admin-email'] ? { adminEmail: values['admin-email'] } : {}),
    ...(values['admin-password'] ? { adminPassword: values['admin-password'] } : {}),
  });
  process.stdout.write(objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
}
