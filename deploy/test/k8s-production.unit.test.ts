/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The production form (issue 31): what `kubectl kustomize` and the schemas cannot see, checked on both rendered
 * overlays against the Kubernetes review of 2026-11-27 (D1, D6, D7, D8, D12, the database's TLS and connection
 * budget, presigned links for the public host, no hard-coded cluster domain).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SERVICES } from '../k8s/services';
import { admits, build, OVERLAYS, podLabels, ROOT } from './k8s-render';

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
});
