/**
 * The Secrets the manifests in k8s/ refer to, as YAML on stdout (never written to the repository).
 *
 * A first install generates every value:
 *
 *   pnpm --filter @dam/deploy k8s:secrets [--database-url 'postgres://user:pass@host:5432/{db}'] \
 *     [--subscribers subscriber-crm,subscriber-erp] \
 *     [--admin-email E --admin-password P] | kubectl apply --server-side --field-manager=dam-secrets -n dam -f -
 *
 * An upgrade re-renders from the Secrets in the cluster: every value found is kept, only what is missing is made (a
 * new service's keys, a new outside subscriber), and `dam-nats-auth` is rendered again from the kept seeds with this
 * release's NATS permissions (as deploy/local/nats-users.ts does on every `up`):
 *
 *   kubectl get secret -n dam -l app.kubernetes.io/part-of=dam -o yaml > current.yaml
 *   pnpm --filter @dam/deploy k8s:secrets --existing current.yaml [--only dam-nats-auth] \
 *     | kubectl apply --server-side --field-manager=dam-secrets -n dam -f -
 *
 * `--rotate <what>` (repeatable, with --existing) makes one identity anew and keeps everything else: `nats:<identity>`
 * and `service-key:<service>` (the old public key stays in dam-nats-auth / SERVICE_TRUSTED_KEYS beside the new one
 * until a re-render with `--prune-old-keys`), `s3:<service>` or `s3:metrics`, `link-signing-key` (the new key signs,
 * the old one still verifies), `jwt` (the new JWT_SECRET signs, the old one stays as JWT_PREVIOUS_SECRET and still
 * verifies until `--prune-old-keys` empties it).
 * `--only a,b` prints just those Secrets. `--subscribers` names every outside system (with --existing too: the list
 * found in `dam-nats-operators` otherwise).
 *
 * Without --database-url, every service's DATABASE_URL points at the dev overlay's PostgreSQL (`postgres`), with a
 * generated password also put into `dam-postgres`. `{db}` is replaced by each service's database (dam_<service>).
 * The object store: MinIO's root user (`dam-minio`, read by MinIO and the `minio-users` Job only), one user per
 * service that uses the bucket (S3_ACCESS_KEY / S3_SECRET_KEY in its own `dam-<service>`; the Job creates them in
 * MinIO with the policies of deploy/k8s/object-store.ts), and Prometheus' user (`dam-minio-metrics`).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { generateServiceKey } from '@dam/auth-tokens';
import { DEFAULT_SUBSCRIBERS, generateNatsUsers, isSubscriberIdentity, NATS_IDENTITIES, parseSubscribers, publicKeyOfSeed, renderNatsAuthorization, type NatsIdentity, type SubscriberIdentity } from '@dam/events';
import { MINIO_METRICS_SECRET, MINIO_ROOT_SECRET, secretKeysOf, SHARED_SECRET_KEYS } from './generate';
import { METRICS_USER } from './object-store';
import { SERVICES, type ServiceSpec } from './services';

/** Secrets by name, each its keys and plain (decoded) values. */
export type ExistingSecrets = ReadonlyMap<string, Readonly<Record<string, string>>>;

export interface SecretOptions {
  databaseUrl?: string;
  /** The outside systems reading asset events, each its own NATS user (`subscriber-<system>`). */
  subscribers?: readonly SubscriberIdentity[];
  adminEmail?: string;
  adminPassword?: string;
  /** The Secrets as they are (parseExistingSecrets): every value found is kept unless rotated. */
  existing?: ExistingSecrets;
  /** Identities made anew although they exist (rotationTargets lists what may be named). */
  rotate?: readonly string[];
  /**
   * Trust only the current keys: drops the public keys earlier rotations left in SERVICE_TRUSTED_KEYS and in
   * dam-nats-auth (kept there so that pods still holding the old key work until they restart), and the previous
   * JWT secret (JWT_PREVIOUS_SECRET, kept so that tokens signed before a rotation work until they expire).
   */
  pruneOldKeys?: boolean;
}

const token = (bytes = 32): string => randomBytes(bytes).toString('hex');
const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, labels: { 'app.kubernetes.io/part-of': 'dam' } },
  type: 'Opaque',
  stringData: data,
});
export type SecretObject = ReturnType<typeof secret>;

/**
 * A Secret as this tool prints it: its values base64 in `data`, never `stringData`. Applied with
 * `kubectl apply --server-side`, nothing of it is copied into an annotation (client-side apply keeps the whole object,
 * plaintext `stringData` included, in `last-applied-configuration`); and a key the release no longer renders is removed
 * by the next apply, which server-side apply does only for `data` (it tracks the keys of `stringData` apart from the
 * `data` the server stores them in, kubernetes/kubernetes#118519).
 */
export function printableSecret(secret: SecretObject): Omit<SecretObject, 'stringData'> & { data: Record<string, string> } {
  const { stringData, ...rest } = secret;
  return { ...rest, data: Object.fromEntries(Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')])) };
}

const OPERATORS_SECRET = 'dam-nats-operators';
/** What every installation has; a new service's own Secret may be missing, these never. */
const REQUIRED_EXISTING = ['dam-shared', OPERATORS_SECRET, MINIO_ROOT_SECRET];
const seedKeyOf = (identity: string): string => `NATS_NKEY_SEED_${identity.toUpperCase().replace(/-/g, '_')}`;
/** Subscriber names are lower case with `-` (never `_`), so a seed's key names its subscriber exactly. */
const subscriberOfSeedKey = (key: string): string => key.slice('NATS_NKEY_SEED_'.length).toLowerCase().replace(/_/g, '-');

/**
 * What `--rotate` may name, for these outside systems. The database password is not among them: the running
 * database keeps the one it was initialised with. Nor is MinIO's root user: it is replaced with MinIO's own tools.
 */
export function rotationTargets(subscribers: readonly SubscriberIdentity[]): string[] {
  return [
    'jwt',
    'link-signing-key',
    ...[...NATS_IDENTITIES, ...subscribers].map((i) => `nats:${i}`),
    ...SERVICES.filter((s) => secretKeysOf(s).includes('SERVICE_KEY')).map((s) => `service-key:${s.name}`),
    ...SERVICES.filter((s) => s.s3).map((s) => `s3:${s.name}`),
    `s3:${METRICS_USER}`,
  ];
}

/**
 * The Secrets of `kubectl get secret -o yaml` (a `List` of them, base64 `data`) or of this tool's own output
 * (documents with `stringData`), by name.
 */
export function parseExistingSecrets(text: string): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  const visit = (o: unknown): void => {
    if (typeof o !== 'object' || o === null) return;
    const obj = o as { kind?: string; items?: unknown[]; metadata?: { name?: string }; data?: Record<string, string>; stringData?: Record<string, string> };
    if (Array.isArray(obj.items)) return obj.items.forEach(visit);
    if (obj.kind !== 'Secret' || !obj.metadata?.name) return;
    const decoded = Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    out.set(obj.metadata.name, { ...out.get(obj.metadata.name), ...decoded, ...obj.stringData });
  };
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`not YAML: ${doc.errors[0]?.message ?? ''}`);
    visit(doc.toJSON());
  }
  return out;
}

/** Every Secret of the suite: generated, or re-rendered from `existing`; `Secret` objects with `stringData` (printableSecret prints them). */
export function generateSecrets(options: SecretOptions = {}): SecretObject[] {
  const existing: ExistingSecrets = options.existing ?? new Map();
  const found = existing.get(OPERATORS_SECRET);
  const subscribers =
    options.subscribers ??
    (found ? Object.keys(found).filter((k) => k !== 'NATS_NKEY_SEED_ADMIN').map(subscriberOfSeedKey).filter(isSubscriberIdentity) : DEFAULT_SUBSCRIBERS);
  // An empty or partial file (a wrong label or namespace) would otherwise make the suite's identities anew: the
  // rotation of everything that --existing is there to prevent.
  const lacking = options.existing ? REQUIRED_EXISTING.filter((n) => !existing.has(n)) : [];
  if (lacking.length > 0) throw new Error(`--existing holds no ${lacking.join(', ')}: pass the output of \`kubectl get secret -n <namespace> -l app.kubernetes.io/part-of=dam -o yaml\` (a first install runs without --existing)`);
  const rotate = new Set(options.rotate ?? []);
  if (rotate.size > 0 && !options.existing) throw new Error('--rotate keeps everything else: it needs --existing');
  const targets = rotationTargets(subscribers);
  const unknown = [...rotate].filter((r) => !targets.includes(r));
  if (unknown.length > 0) throw new Error(`cannot rotate ${unknown.join(', ')}; one of: ${targets.join(', ')}`);
  /** The existing value, unless it is missing or `rotation` is asked for; else a new one. */
  const keep = (name: string, key: string, make: () => string, rotation?: string): string =>
    (rotation !== undefined && rotate.has(rotation) ? undefined : existing.get(name)?.[key]) ?? make();

  // The dev database's password is known to the running database: kept; a new service's URL is built with it.
  const devDatabase = !options.databaseUrl && (!options.existing || existing.has('dam-postgres'));
  const pgPassword = keep('dam-postgres', 'POSTGRES_PASSWORD', () => token(16));
  const databaseUrl = options.databaseUrl ?? (devDatabase ? `postgres://dam:${pgPassword}@postgres:5432/{db}` : undefined);
  const root = { user: keep(MINIO_ROOT_SECRET, 'MINIO_ROOT_USER', () => `damroot${token(4)}`), password: keep(MINIO_ROOT_SECRET, 'MINIO_ROOT_PASSWORD', () => token(24)) };
  // MinIO takes access keys of up to 20 characters and secret keys of up to 40; a user's two keys go together.
  const s3User = (name: string, secretName: string, [accessKey, secretKey]: readonly [string, string]) => {
    const rotated = rotate.has(`s3:${name}`);
    const have = existing.get(secretName);
    const kept = !rotated && have?.[accessKey] && have[secretKey] ? { access: have[accessKey], secret: have[secretKey] } : undefined;
    return kept ?? { access: `${name.replace(/-/g, '')}-${token(3)}`, secret: token(20) };
  };
  const metrics = s3User(METRICS_USER, MINIO_METRICS_SECRET, ['MINIO_METRICS_ACCESS_KEY', 'MINIO_METRICS_SECRET_KEY']);

  // Only the services that sign requests have a key (secretKeysOf): no key nobody holds is trusted.
  const serviceKeys = new Map(SERVICES.filter((s) => secretKeysOf(s).includes('SERVICE_KEY')).map((s) => [s.name, keep(`dam-${s.name}`, 'SERVICE_KEY', () => JSON.stringify(generateServiceKey(s.name).privateJwk), `service-key:${s.name}`)]));
  // Made only when a seed is missing or rotated (a pure re-render makes no key at all).
  let fresh: ReturnType<typeof generateNatsUsers> | undefined;
  const freshSeed = (identity: NatsIdentity) => () => (fresh ??= generateNatsUsers(subscribers)).find((u) => u.identity === identity)?.seed as string;
  const seedOf = (identity: NatsIdentity): string => {
    const where = (SERVICES as readonly ServiceSpec[]).some((s) => s.name === identity && s.nats) ? [`dam-${identity}`, 'NATS_NKEY_SEED'] : [OPERATORS_SECRET, seedKeyOf(identity)];
    return keep(where[0] as string, where[1] as string, freshSeed(identity), `nats:${identity}`);
  };
  const identities: NatsIdentity[] = [...NATS_IDENTITIES, ...subscribers];
  const seeds = new Map(identities.map((i) => [i, seedOf(i)]));

  const current = identities.map((identity) => ({ identity, publicKey: publicKeyOf(seeds.get(identity) as string) }));
  // A rotated identity's old public key stays a user (same permissions) until pruned: its running pods keep working.
  const previous = options.pruneOldKeys ? [] : natsUsersOf(existing.get('dam-nats-auth')?.['auth.conf'] ?? '').filter((u) => identities.includes(u.identity));
  const natsUsers = [...current, ...previous.filter((u) => !current.some((c) => c.publicKey === u.publicKey))];

  const own = (s: ServiceSpec): Record<string, string> => {
    const name = `dam-${s.name}`;
    const database = s.database
      ? keep(name, 'DATABASE_URL', () => {
          if (!databaseUrl) throw new Error(`${s.name} has no DATABASE_URL yet and the database is not the dev overlay's: give --database-url`);
          return databaseUrl.replace('{db}', `dam_${s.name.replace(/-/g, '_')}`);
        })
      : '';
    const s3 = s.s3 ? s3User(s.name, name, ['S3_ACCESS_KEY', 'S3_SECRET_KEY']) : undefined;
    // Links stay valid across a rotation: the new key signs, the old one (second) still verifies.
    const linkKeys = () => (rotate.has('link-signing-key') ? [token(32), existing.get(name)?.LINK_SIGNING_KEYS?.split(',')[0]].filter(Boolean).join(',') : token(32));
    const values: Record<string, () => string> = {
      SERVICE_KEY: () => serviceKeys.get(s.name) as string,
      NATS_NKEY_SEED: () => seeds.get(s.name as NatsIdentity) as string,
      DATABASE_URL: () => database,
      LINK_SIGNING_KEYS: () => (rotate.has('link-signing-key') ? linkKeys() : keep(name, 'LINK_SIGNING_KEYS', linkKeys)),
      ADMIN_EMAIL: () => keep(name, 'ADMIN_EMAIL', () => options.adminEmail ?? 'admin@dam.example.com'),
      ADMIN_PASSWORD: () => keep(name, 'ADMIN_PASSWORD', () => options.adminPassword ?? token(12)),
      S3_ACCESS_KEY: () => s3?.access as string,
      S3_SECRET_KEY: () => s3?.secret as string,
    };
    return Object.fromEntries(secretKeysOf(s).map((k) => [k, (values[k] as () => string)()]));
  };
  const shared = {
    JWT_SECRET: keep('dam-shared', 'JWT_SECRET', () => token(32), 'jwt'),
    JWT_PREVIOUS_SECRET: previousJwtSecret(existing.get('dam-shared'), rotate.has('jwt'), options.pruneOldKeys === true),
    SERVICE_TRUSTED_KEYS: trustedKeys([...serviceKeys.values()], options.pruneOldKeys ? undefined : existing.get('dam-shared')?.SERVICE_TRUSTED_KEYS),
  };
  if (Object.keys(shared).join() !== SHARED_SECRET_KEYS.join()) throw new Error('dam-shared does not hold what the manifests read');
  return [
    secret('dam-shared', shared),
    ...SERVICES.map((s) => secret(`dam-${s.name}`, own(s))),
    // The NATS servers' `authorization` block: public keys and each identity's permissions (this release's) only.
    secret('dam-nats-auth', { 'auth.conf': renderNatsAuthorization(natsUsers) }),
    // Seeds for operators (admin) and each outside system (read-only on ASSET_EVENTS, its one consumer named as itself):
    // hand them out, not to pods.
    secret(OPERATORS_SECRET, {
      NATS_NKEY_SEED_ADMIN: seeds.get('admin') as string,
      ...Object.fromEntries(subscribers.map((s) => [seedKeyOf(s), seeds.get(s) as string])),
    }),
    secret(MINIO_ROOT_SECRET, { MINIO_ROOT_USER: root.user, MINIO_ROOT_PASSWORD: root.password }),
    // Hand these to whoever makes Prometheus' bearer token (k8s/README.md): they read metrics and nothing else.
    secret(MINIO_METRICS_SECRET, { MINIO_METRICS_ACCESS_KEY: metrics.access, MINIO_METRICS_SECRET_KEY: metrics.secret }),
    ...(devDatabase ? [secret('dam-postgres', { POSTGRES_USER: keep('dam-postgres', 'POSTGRES_USER', () => 'dam'), POSTGRES_PASSWORD: pgPassword })] : []),
  ];
}

/** Deriving a public nkey costs milliseconds; a process re-rendering several times (the tests) asks for the same ones. */
const publicKeys = new Map<string, string>();
function publicKeyOf(seed: string): string {
  let key = publicKeys.get(seed);
  if (key === undefined) publicKeys.set(seed, (key = publicKeyOfSeed(seed)));
  return key;
}

/** The users of an `authorization` block renderNatsAuthorization wrote (`# <identity>` above each `{ nkey: ... }`). */
function natsUsersOf(conf: string): Array<{ identity: NatsIdentity; publicKey: string }> {
  return [...conf.matchAll(/^\s*# (\S+)\n\s*\{ nkey: "(U[A-Z2-7]{55})"/gm)].map((m) => ({ identity: m[1] as NatsIdentity, publicKey: m[2] as string }));
}

/**
 * JWT_PREVIOUS_SECRET: the JWT_SECRET a rotation replaces, kept by later re-renders, until pruned. Empty, never absent,
 * when there is none: `kubectl apply` cannot take a key out of a Secret it wrote with `stringData`
 * (kubernetes/kubernetes#89938), so a key left out would keep the old secret valid.
 */
function previousJwtSecret(shared: Readonly<Record<string, string>> | undefined, rotated: boolean, pruned: boolean): string {
  if (rotated) return shared?.JWT_SECRET ?? '';
  return pruned ? '' : (shared?.JWT_PREVIOUS_SECRET ?? '');
}

/**
 * SERVICE_TRUSTED_KEYS: the public keys of the current service keys, after those already trusted (`previous`), so a
 * rotated service's old key verifies until the pruning re-render (parseTrustedKeys takes several keys per service).
 */
function trustedKeys(privateKeys: string[], previous: string | undefined): string {
  const current = privateKeys.map((text) => {
    const { d: _private, ...publicJwk } = JSON.parse(text) as Record<string, unknown>;
    return publicJwk;
  });
  const before = previous ? ((JSON.parse(previous) as { keys: Array<Record<string, unknown>> }).keys ?? []) : [];
  const kids = new Set(before.map((k) => k.kid));
  return JSON.stringify({ keys: [...before, ...current.filter((k) => !kids.has(k.kid))] });
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      'database-url': { type: 'string' },
      subscribers: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
      existing: { type: 'string' },
      rotate: { type: 'string', multiple: true },
      'prune-old-keys': { type: 'boolean' },
      only: { type: 'string' },
    },
  });
  if (values['database-url'] && !values['database-url'].includes('{db}')) {
    console.error('--database-url must contain {db}, replaced by each service\'s database name');
    process.exit(2);
  }
  try {
    const objects = generateSecrets({
      ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
      ...(values.subscribers ? { subscribers: parseSubscribers(values.subscribers) } : {}),
      ...(values['admin-email'] ? { adminEmail: values['admin-email'] } : {}),
      ...(values['admin-password'] ? { adminPassword: values['admin-password'] } : {}),
      ...(values.existing ? { existing: parseExistingSecrets(readFileSync(values.existing === '-' ? 0 : values.existing, 'utf8')) } : {}),
      ...(values.rotate ? { rotate: values.rotate.flatMap((r) => r.split(',')).map((r) => r.trim()).filter(Boolean) } : {}),
      ...(values['prune-old-keys'] ? { pruneOldKeys: true } : {}),
    });
    const only = values.only?.split(',').map((n) => n.trim()).filter(Boolean);
    const missing = only?.filter((n) => !objects.some((o) => o.metadata.name === n)) ?? [];
    if (missing.length > 0) throw new Error(`--only: no Secret ${missing.join(', ')}; these exist: ${objects.map((o) => o.metadata.name).join(', ')}`);
    const shown = only ? objects.filter((o) => only.includes(o.metadata.name)) : objects;
    process.stdout.write(shown.map((o) => stringify(printableSecret(o), { lineWidth: 0 })).join('---\n'));
  } catch (error) {
    console.error(`k8s:secrets: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  }
}
