/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The production form (issue 31): what `kubectl kustomize` and the schemas cannot see, checked on both rendered
 * overlays against the Kubernetes review of 2026-11-27 (D1, D6, D7, D8, D12, the database's TLS and connection
 * budget, presigned links for the public host, no hard-coded cluster domain).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateSecrets } from '../k8s/secrets';
import { SERVICES } from '../k8s/services';
import { admits, build, OVERLAYS, podLabels, quantity, ROOT } from './k8s-render';

const secrets = generateSecrets();
const secretData = (name: string): Record<string, string> | undefined => secrets.find((s) => s.metadata.name === name)?.stringData;
const sourcesOf = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourcesOf(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
const serviceSource = (name: string): string => sourcesOf(path.join(ROOT, 'services', name, 'src')).map((f) => readFileSync(f, 'utf8')).join('\n');

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

  describe('D1: the object store admits every pod that opens connections to it', () => {
    // From the code: services that build a storage client with their own credentials, and services that fetch the
    // presigned URL an upstream names in its answer (the gateway's download path: ACCEL, libs/http/src/accel.ts).
    const withCredentials = SERVICES.filter((s) => /storageConfigFromEnv\(/.test(readFileSync(path.join(ROOT, 'services', s.name, 'src', 'main.ts'), 'utf8'))).map((s) => s.name);
    const fetchingPresigned = SERVICES.filter((s) => /headers\[ACCEL\.redirect\]/.test(serviceSource(s.name))).map((s) => s.name);

    it('declares in deploy/k8s/services.ts what the code does: `s3` for its own users, `fetchesPresigned` for the gateway', () => {
      expect(fetchingPresigned).toEqual(['gateway']);
      expect(withCredentials.length).toBeGreaterThanOrEqual(5);
      expect(SERVICES.filter((s) => s.s3).map((s) => s.name).sort()).toEqual([...withCredentials].sort());
      expect(SERVICES.filter((s) => s.fetchesPresigned).map((s) => s.name)).toEqual(fetchingPresigned);
    });

    it('lets each of them reach MinIO on 9000 (downloads through the API stream from presigned URLs)', () => {
      const minio = named('StatefulSet', 'minio');
      const clients = [...new Set([...SERVICES.filter((s) => s.s3).map((s) => s.name), ...withCredentials, ...fetchingPresigned])];
      for (const name of clients) expect([name, admits(objects, minio, podLabels(named('Deployment', name)), 9000)]).toEqual([name, true]);
      // The evaluation does refuse: a service that never touches the store is not admitted.
      expect(admits(objects, minio, podLabels(named('Deployment', 'search')), 9000)).toBe(false);
    });
  });

  it('D6: caps JetStream below the volume NATS has (the rendered nats.conf with the pod\'s environment), and nats-server accepts it', () => {
    const nats = named('StatefulSet', 'nats');
    const conf: string = named('ConfigMap', 'nats-config').data['nats.conf'];
    const [container] = nats.spec.template.spec.containers;
    const env: Record<string, string> = Object.fromEntries((container.env ?? []).filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));
    const raw = /max_file_store:\s*(\S+)/.exec(conf)?.[1] as string;
    const value = raw.startsWith('$') ? env[raw.slice(1)] : raw;
    // NATS' sizes: bytes, or K/M/G/T as powers of 1000 (8G is 8e9).
    const m = /^(\d+)([KMGT])?B?$/i.exec(String(value));
    expect([raw, value, m]).toEqual([raw, value, expect.anything()]);
    const cap = Number(m?.[1]) * ({ K: 1e3, M: 1e6, G: 1e9, T: 1e12 }[(m?.[2] ?? '').toUpperCase()] ?? 1);
    const volume = quantity(nats.spec.volumeClaimTemplates.find((t: any) => t.metadata.name === 'data').spec.resources.requests.storage);
    console.log(`${overlay}: JetStream max_file_store ${cap} bytes on a ${volume}-byte volume (${((100 * cap) / volume).toFixed(0)} %)`);
    expect(cap).toBeLessThan(volume);
    expect(cap).toBeGreaterThan(volume / 2);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-conf-'));
    try {
      mkdirSync(path.join(dir, 'auth'));
      writeFileSync(path.join(dir, 'nats.conf'), conf);
      writeFileSync(path.join(dir, 'auth', 'auth.conf'), secretData('dam-nats-auth')?.['auth.conf'] as string);
      const run = (vars: Record<string, string>) => spawnSync('nats-server', ['-c', path.join(dir, 'nats.conf'), '-t'], { env: { PATH: process.env.PATH, POD_NAME: 'nats-0', ...vars }, encoding: 'utf8' });
      const checked = run(env);
      if (checked.error) throw new Error(`nats-server is needed for this test (deploy/infra/install-deps.sh): ${checked.error.message}`);
      expect([checked.status, checked.stderr]).toEqual([0, expect.stringContaining('is valid')]);
      // The check does fail: without the variable, max_file_store has no value.
      const { JS_MAX_FILE_STORE: _cap, ...without } = env;
      expect(run(without).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
