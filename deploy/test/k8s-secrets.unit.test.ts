/**
 * Production form D5 (issue 31): the secrets tool re-renders from the Secrets in the cluster (every value kept, only
 * what is missing made, `dam-nats-auth` from the kept seeds with this release's permissions) and rotates one identity
 * at a time, so an upgrade that needs new NATS permissions changes nothing else.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { parseTrustedKeys } from '@dam/auth-tokens';
import { DEFAULT_SUBSCRIBERS, publicKeyOfSeed } from '@dam/events';
import { generateSecrets, parseExistingSecrets, rotationTargets, type SecretObject } from '../k8s/secrets';
import { OVERLAYS, ROOT, build, containersOf, podsOf } from './k8s-render';

/** What `kubectl get secret -l app.kubernetes.io/part-of=dam -o yaml` prints for these Secrets: a List, base64 data. */
const asCluster = (secrets: SecretObject[]): string =>
  stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: secrets.map((s) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { ...s.metadata, namespace: 'dam', resourceVersion: '4711', uid: 'c0ffee' },
      type: 'Opaque',
      data: Object.fromEntries(Object.entries(s.stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    })),
  });
/** A container's environment variable as the rendered manifests have it. */
type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } };
/** Every value as `<secret>/<key>`. */
const flat = (secrets: SecretObject[]): Map<string, string> =>
  new Map(secrets.flatMap((s) => Object.entries(s.stringData).map(([k, v]) => [`${s.metadata.name}/${k}`, v] as const)));
/** The `<secret>/<key>`s whose value differs (or that exist on one side only). */
const changed = (a: SecretObject[], b: SecretObject[]): string[] => {
  const [x, y] = [flat(a), flat(b)];
  return [...new Set([...x.keys(), ...y.keys()])].filter((k) => x.get(k) !== y.get(k)).sort();
};

describe('k8s:secrets re-renders from the existing Secrets', () => {
  const installed = generateSecrets({ subscribers: DEFAULT_SUBSCRIBERS });
  const existing = parseExistingSecrets(asCluster(installed));

  it("keeps every value, byte for byte, from kubectl's List (base64) and from its own output (stringData)", () => {
    expect(changed(installed, generateSecrets({ existing }))).toEqual([]);
    const own = parseExistingSecrets(installed.map((o) => stringify(o)).join('---\n'));
    expect(changed(installed, generateSecrets({ existing: own }))).toEqual([]);
    // The same objects in the same order: `kubectl apply` sees no change.
    expect(generateSecrets({ existing }).map((o) => stringify(o))).toEqual(installed.map((o) => stringify(o)));
  });

  it('adds a new outside subscriber: only dam-nats-auth and dam-nats-operators change, and only by that user', () => {
    const upgraded = generateSecrets({ existing, subscribers: [...DEFAULT_SUBSCRIBERS, 'subscriber-crm'] });
    expect(changed(installed, upgraded)).toEqual(['dam-nats-auth/auth.conf', 'dam-nats-operators/NATS_NKEY_SEED_SUBSCRIBER_CRM']);
    const seed = flat(upgraded).get('dam-nats-operators/NATS_NKEY_SEED_SUBSCRIBER_CRM') as string;
    const before = flat(installed).get('dam-nats-auth/auth.conf') as string;
    const after = flat(upgraded).get('dam-nats-auth/auth.conf') as string;
    // Every user of before is still there, unchanged; the one line more is the new system's.
    const users = (conf: string) => conf.split('\n').filter((l) => l.includes('nkey:'));
    expect(users(after).filter((l) => !users(before).includes(l))).toEqual([expect.stringContaining(publicKeyOfSeed(seed))]);
    expect(users(before).every((l) => users(after).includes(l))).toBe(true);
    // The next re-render finds the new subscriber in dam-nats-operators by itself.
    expect(changed(upgraded, generateSecrets({ existing: parseExistingSecrets(asCluster(upgraded)) }))).toEqual([]);
  });

  it("renders dam-nats-auth from the kept seeds with this release's permissions, not the old text", () => {
    const stale = new Map(existing);
    stale.set('dam-nats-auth', { 'auth.conf': 'authorization { users = [] }\n' });
    expect(changed(installed, generateSecrets({ existing: stale }))).toEqual([]);
  });

  it("fills only what is missing: a new service's Secret, with the dev database password the database already has", () => {
    const partial = new Map(existing);
    partial.delete('dam-addon');
    const upgraded = generateSecrets({ existing: partial });
    // addon's own values are new; what others read of it (its NATS user) changes with them. addon calls no service,
    // so it has no SERVICE_KEY and SERVICE_TRUSTED_KEYS stays as it was.
    expect(changed(installed, upgraded).filter((k) => !k.startsWith('dam-addon/'))).toEqual(['dam-nats-auth/auth.conf']);
    expect(flat(upgraded).get('dam-addon/DATABASE_URL')).toContain(`:${existing.get('dam-postgres')?.POSTGRES_PASSWORD}@postgres:5432/dam_addon`);
    // An external database (no dam-postgres): a service without a URL needs --database-url, never a made-up one.
    const external = new Map(partial);
    external.delete('dam-postgres');
    expect(() => generateSecrets({ existing: external })).toThrow(/addon has no DATABASE_URL yet.*--database-url/);
    const given = generateSecrets({ existing: external, databaseUrl: 'postgres://u:p@db:5432/{db}' });
    expect([flat(given).get('dam-addon/DATABASE_URL'), given.some((s) => s.metadata.name === 'dam-postgres')]).toEqual([
      'postgres://u:p@db:5432/dam_addon',
      false,
    ]);
  });
});

describe('k8s:secrets --rotate changes exactly the named identity', () => {
  const installed = generateSecrets({ subscribers: DEFAULT_SUBSCRIBERS });
  const existing = parseExistingSecrets(asCluster(installed));
  const rotated = (...rotate: string[]) => generateSecrets({ existing, rotate });

  it.each([
    ['nats:metadata', ['dam-metadata/NATS_NKEY_SEED', 'dam-nats-auth/auth.conf']],
    ['nats:admin', ['dam-nats-auth/auth.conf', 'dam-nats-operators/NATS_NKEY_SEED_ADMIN']],
    ['nats:subscriber-example', ['dam-nats-auth/auth.conf', 'dam-nats-operators/NATS_NKEY_SEED_SUBSCRIBER_EXAMPLE']],
    ['service-key:upload', ['dam-shared/SERVICE_TRUSTED_KEYS', 'dam-upload/SERVICE_KEY']],
    ['s3:conversion', ['dam-conversion/S3_ACCESS_KEY', 'dam-conversion/S3_SECRET_KEY']],
    ['s3:metrics', ['dam-minio-metrics/MINIO_METRICS_ACCESS_KEY', 'dam-minio-metrics/MINIO_METRICS_SECRET_KEY']],
    ['jwt', ['dam-shared/JWT_PREVIOUS_SECRET', 'dam-shared/JWT_SECRET']],
    ['link-signing-key', ['dam-link-signing/LINK_SIGNING_KEYS']],
  ])('%s', (target, keys) => {
    expect(changed(installed, rotated(target))).toEqual(keys);
  });

  it('keeps the old service key trusted beside the new one until --prune-old-keys', () => {
    const after = rotated('service-key:upload');
    const trusted = parseTrustedKeys(flat(after).get('dam-shared/SERVICE_TRUSTED_KEYS') as string);
    const kidOf = (secrets: SecretObject[]) => (JSON.parse(flat(secrets).get('dam-upload/SERVICE_KEY') as string) as { kid: string }).kid;
    expect([trusted.has(kidOf(installed)), trusted.has(kidOf(after)), trusted.size]).toEqual([
      true,
      true,
      parseTrustedKeys(flat(installed).get('dam-shared/SERVICE_TRUSTED_KEYS') as string).size + 1,
    ]);
    const pruned = generateSecrets({ existing: parseExistingSecrets(asCluster(after)), pruneOldKeys: true });
    expect(changed(after, pruned)).toEqual(['dam-shared/SERVICE_TRUSTED_KEYS']);
    const left = parseTrustedKeys(flat(pruned).get('dam-shared/SERVICE_TRUSTED_KEYS') as string);
    expect([left.has(kidOf(installed)), left.has(kidOf(after))]).toEqual([false, true]);
  });

  it('keeps the old NATS key a user beside the new one until --prune-old-keys (same permissions), for any identity', () => {
    const users = (secrets: SecretObject[]) => (flat(secrets).get('dam-nats-auth/auth.conf') as string).split('\n').filter((l) => l.includes('nkey:'));
    const keyOf = (secrets: SecretObject[], where: string) => publicKeyOfSeed(flat(secrets).get(where) as string);
    for (const [target, where] of [
      ['nats:metadata', 'dam-metadata/NATS_NKEY_SEED'],
      ['nats:subscriber-example', 'dam-nats-operators/NATS_NKEY_SEED_SUBSCRIBER_EXAMPLE'],
    ] as const) {
      const after = rotated(target);
      const [oldKey, newKey] = [keyOf(installed, where), keyOf(after, where)];
      const lineOf = (secrets: SecretObject[], key: string) => users(secrets).find((l) => l.includes(key));
      expect([target, users(after).length, lineOf(after, oldKey), lineOf(after, newKey)?.replace(newKey, oldKey)]).toEqual([
        target,
        users(installed).length + 1,
        lineOf(installed, oldKey),
        lineOf(installed, oldKey),
      ]);
      // A re-render keeps both; pruning leaves the new one alone, and nothing else changes.
      const again = parseExistingSecrets(asCluster(after));
      expect(changed(after, generateSecrets({ existing: again }))).toEqual([]);
      const pruned = generateSecrets({ existing: again, pruneOldKeys: true });
      expect([changed(after, pruned), lineOf(pruned, oldKey), users(pruned).length]).toEqual([['dam-nats-auth/auth.conf'], undefined, users(installed).length]);
    }
  });

  it('keeps the old JWT secret as JWT_PREVIOUS_SECRET (tokens signed before still verify) until --prune-old-keys empties it', () => {
    const values = (secrets: SecretObject[]) => [flat(secrets).get('dam-shared/JWT_SECRET'), flat(secrets).get('dam-shared/JWT_PREVIOUS_SECRET')];
    const [first] = values(installed);
    // A first install has none; the key is there, empty, so the pods see the same variables before and after.
    expect(values(installed)).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/), '']);
    const after = rotated('jwt');
    const [second, previous] = values(after);
    expect([second === first, previous]).toEqual([false, first]);
    // A re-render keeps both; pruning empties the previous one (never drops the key: `kubectl apply` of stringData
    // would leave the old value in the cluster) and changes nothing else.
    const again = parseExistingSecrets(asCluster(after));
    expect(changed(after, generateSecrets({ existing: again }))).toEqual([]);
    const pruned = generateSecrets({ existing: again, pruneOldKeys: true });
    expect([changed(after, pruned), values(pruned)]).toEqual([['dam-shared/JWT_PREVIOUS_SECRET'], [second, '']]);
    // A second rotation keeps only the one just replaced.
    expect(values(generateSecrets({ existing: again, rotate: ['jwt'] }))[1]).toBe(second);
    // A dam-shared made before JWT_PREVIOUS_SECRET existed gets the key, empty.
    const older = new Map(existing);
    const { JWT_PREVIOUS_SECRET: _none, ...withoutKey } = existing.get('dam-shared') as Record<string, string>;
    older.set('dam-shared', withoutKey);
    expect(changed(installed, generateSecrets({ existing: older }))).toEqual([]);
  });

  it('gives JWT_PREVIOUS_SECRET to exactly the pods that get JWT_SECRET, optional (an older dam-shared lacks it), in both overlays', () => {
    for (const overlay of OVERLAYS) {
      const refs = podsOf(build(overlay)).flatMap((o) =>
        containersOf(o).flatMap((c: { env?: EnvVar[] }) =>
          (c.env ?? []).filter((e) => e.name.startsWith('JWT_')).map((e) => [o.metadata.name, e.name, e.valueFrom?.secretKeyRef] as const),
        ),
      );
      const names = (variable: string) =>
        refs
          .filter((r) => r[1] === variable)
          .map((r) => r[0])
          .sort();
      expect([overlay, names('JWT_SECRET'), names('JWT_PREVIOUS_SECRET')]).toEqual([overlay, ['auth', 'gateway', 'upload'], ['auth', 'gateway', 'upload']]);
      for (const [, name, ref] of refs) {
        expect(ref).toEqual({ name: 'dam-shared', key: name, ...(name === 'JWT_PREVIOUS_SECRET' ? { optional: true } : {}) });
      }
    }
  });

  it('keeps the old link-signing key second, so links signed before still verify', () => {
    const [before] = (flat(installed).get('dam-link-signing/LINK_SIGNING_KEYS') as string).split(',');
    const keys = (flat(rotated('link-signing-key')).get('dam-link-signing/LINK_SIGNING_KEYS') as string).split(',');
    expect([keys.length, keys[1]]).toEqual([2, before]);
  });

  it('refuses what it cannot rotate, and rotation without --existing', () => {
    expect(() => rotated('postgres')).toThrow(/cannot rotate postgres/);
    expect(() => rotated('nats:subscriber-nobody')).toThrow(/cannot rotate/);
    expect(() => generateSecrets({ rotate: ['jwt'] })).toThrow(/--existing/);
    // An empty List (a wrong namespace or label) would otherwise make every identity anew.
    expect(() => generateSecrets({ existing: parseExistingSecrets('apiVersion: v1\nkind: List\nitems: []\n') })).toThrow(
      /holds no dam-shared, dam-nats-operators, dam-minio/,
    );
    expect(rotationTargets(DEFAULT_SUBSCRIBERS)).toEqual(expect.arrayContaining(['jwt', 'nats:metadata', 'service-key:gateway', 's3:upload', 's3:metrics']));
  });
});

describe('the re-rendered NATS authorization', () => {
  it('is accepted by nats-server (nats-server -t with it included)', () => {
    const installed = generateSecrets();
    const upgraded = generateSecrets({
      existing: parseExistingSecrets(asCluster(installed)),
      subscribers: [...DEFAULT_SUBSCRIBERS, 'subscriber-crm'],
      rotate: ['nats:search'],
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-auth-'));
    try {
      mkdirSync(path.join(dir, 'auth'));
      writeFileSync(
        path.join(dir, 'nats.conf'),
        `listen: 127.0.0.1:-1\njetstream { store_dir: ${JSON.stringify(path.join(dir, 'js'))} }\ninclude ./auth/auth.conf\n`,
      );
      const check = (conf: string) => {
        writeFileSync(path.join(dir, 'auth', 'auth.conf'), conf);
        return spawnSync('nats-server', ['-c', path.join(dir, 'nats.conf'), '-t'], { encoding: 'utf8' });
      };
      const ok = check(flat(upgraded).get('dam-nats-auth/auth.conf') as string);
      if (ok.error) throw new Error(`nats-server is needed for this test (deploy/infra/install-deps.sh): ${ok.error.message}`);
      expect([ok.status, ok.stderr]).toEqual([0, expect.stringContaining('is valid')]);
      // The check does refuse a broken one.
      expect(check('authorization { users = [ { nkey: "U" ').status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('comes alone out of `k8s:secrets --existing FILE --only dam-nats-auth`, as base64 data', () => {
    const installed = generateSecrets();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-secrets-'));
    try {
      const file = path.join(dir, 'current.yaml');
      writeFileSync(file, asCluster(installed));
      const out = execFileSync(
        path.join(ROOT, 'node_modules', '.bin', 'tsx'),
        [path.join(ROOT, 'deploy', 'k8s', 'secrets.ts'), '--existing', file, '--only', 'dam-nats-auth'],
        { encoding: 'utf8' },
      );
      // base64 `data` only: `kubectl apply --server-side` keeps no plaintext copy, and prunes keys of `data`.
      const docs = parseAllDocuments(out).map((d) => d.toJSON() as { metadata: { name: string }; data?: Record<string, string>; stringData?: unknown });
      expect(docs.map((d) => [d.metadata.name, Buffer.from(d.data?.['auth.conf'] ?? '', 'base64').toString('utf8'), d.stringData])).toEqual([
        ['dam-nats-auth', flat(installed).get('dam-nats-auth/auth.conf'), undefined],
      ]);
      expect(parseExistingSecrets(out).get('dam-nats-auth')).toEqual({ 'auth.conf': flat(installed).get('dam-nats-auth/auth.conf') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
