/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The production form (issue 31): what `kubectl kustomize` and the schemas cannot see, checked on both rendered
 * overlays against the Kubernetes review of 2026-11-27 (D1, D6, D7, D8, D12, the database's TLS and connection
 * budget, presigned links for the public host, no hard-coded cluster domain).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { generateSecrets } from '../k8s/secrets';
import { SERVICES } from '../k8s/services';
import {
  admits,
  build,
  containersOf,
  emptyDirsOf,
  initContainersOf,
  MiB,
  OVERLAYS,
  podLabels,
  podsOf,
  quantity,
  ROOT,
  selects,
  workloadsOf,
} from './k8s-render';

const secrets = generateSecrets();
const secretData = (name: string): Record<string, string> | undefined => secrets.find((s) => s.metadata.name === name)?.stringData;
const sourcesOf = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourcesOf(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
const serviceSource = (name: string): string =>
  sourcesOf(path.join(ROOT, 'services', name, 'src'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');

/** What the kubelet keeps of a container's logs by default (containerLogMaxSize 10Mi × containerLogMaxFiles 5). */
const LOGS = 50 * MiB;
/**
 * PostgreSQL's max_connections less the superuser reserve and room for admins: the dev overlay's pod runs the default
 * 100 (also CloudNativePG's); prod's database must allow 150 (docs/operations.md, "PostgreSQL connection budget"),
 * since the edges (gateway, upload) keep Idempotency-Key responses there, one connection per replica (issue 35).
 */
const CONNECTION_BUDGET: Record<string, number> = { dev: 90, prod: 140 };
/** A first install (migrations, MinIO's quorum, the JetStream meta leader, then the streams) must fit in this. */
const FIRST_INSTALL_SECONDS = 300;
const LIVENESS_MAX_SECONDS = 60;
/** The child process' answers by upload's sizes (the overlays give it the same: asked once). */
const spooled: Record<string, string> = {};

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('dam-config'));
  /** A container's environment, its Secrets' keys as the secrets tool makes them. */
  const envOf = (c: any): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const f of c.envFrom ?? []) Object.assign(env, objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === f.configMapRef?.name)?.data ?? {});
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      env[e.name] = e.value ?? (ref ? secretData(ref.name)?.[ref.key] : undefined) ?? `<${e.name}>`;
    }
    return env;
  };

  describe('D1: the object store admits every pod that opens connections to it', () => {
    // From the code: services that build a storage client with their own credentials, and services that fetch the
    // presigned URL an upstream names in its answer (the gateway's download path: ACCEL, libs/http/src/accel.ts).
    const withCredentials = SERVICES.filter((s) =>
      /storageConfigFromEnv\(/.test(readFileSync(path.join(ROOT, 'services', s.name, 'src', 'main.ts'), 'utf8')),
    ).map((s) => s.name);
    const fetchingPresigned = SERVICES.filter((s) => /headers\[ACCEL\.redirect\]/.test(serviceSource(s.name))).map((s) => s.name);

    it('declares in deploy/k8s/services.ts what the code does: `s3` for its own users, `fetchesPresigned` for the gateway', () => {
      expect(fetchingPresigned).toEqual(['gateway']);
      expect(withCredentials.length).toBeGreaterThanOrEqual(5);
      expect(
        SERVICES.filter((s) => s.s3)
          .map((s) => s.name)
          .sort(),
      ).toEqual([...withCredentials].sort());
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

  it("D6: caps JetStream below the volume NATS has (the rendered nats.conf with the pod's environment), and nats-server accepts it", () => {
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
    // The streams' budget (metadata, libs/events splits it) stays within the cap, which reserves it up front.
    const streams = Number(envOf(named('Deployment', 'metadata').spec.template.spec.containers[0]).NATS_STREAMS_MAX_BYTES);
    expect(streams).toBeLessThanOrEqual(0.75 * cap);
    expect(streams).toBeGreaterThan(cap / 2);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-conf-'));
    try {
      mkdirSync(path.join(dir, 'auth'));
      writeFileSync(path.join(dir, 'nats.conf'), conf);
      writeFileSync(path.join(dir, 'auth', 'auth.conf'), secretData('dam-nats-auth')?.['auth.conf'] as string);
      const run = (vars: Record<string, string>) =>
        spawnSync('nats-server', ['-c', path.join(dir, 'nats.conf'), '-t'], { env: { PATH: process.env.PATH, POD_NAME: 'nats-0', ...vars }, encoding: 'utf8' });
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

  describe('D7: scratch volumes are accounted for on the node', () => {
    it('gives every container an ephemeral-storage request of at least the emptyDirs it mounts, and a limit above it with its logs', () => {
      let checked = 0;
      for (const o of workloadsOf(objects)) {
        const dirs = emptyDirsOf(o);
        for (const c of containersOf(o)) {
          const mounted = [...new Set((c.volumeMounts ?? []).map((m: any) => m.name))].filter((n) => dirs.has(n as string));
          const sum = mounted.reduce((n: number, v) => n + (dirs.get(v as string) as number), 0);
          const request = quantity(c.resources?.requests?.['ephemeral-storage'] ?? 0);
          const limit = quantity(c.resources?.limits?.['ephemeral-storage'] ?? 0);
          expect([o.metadata.name, c.name, Number.isFinite(sum), request >= sum, limit >= Math.max(request, sum + LOGS)]).toEqual([
            o.metadata.name,
            c.name,
            true,
            true,
            true,
          ]);
          checked += 1;
        }
        // The kubelet evicts a pod whose volumes and logs pass the sum of its containers' limits.
        const podLimit = o.spec.template.spec.containers.reduce((n: number, c: any) => n + quantity(c.resources?.limits?.['ephemeral-storage'] ?? 0), 0);
        const allDirs = [...dirs.values()].reduce((n, v) => n + v, 0);
        expect([o.metadata.name, podLimit >= allDirs + LOGS]).toEqual([o.metadata.name, true]);
      }
      expect(checked).toBeGreaterThanOrEqual(SERVICES.length + SERVICES.filter((x) => x.database).length + 3);
      // The sizes checked are the ones the services are given: transcode's 20Gi of /tmp is reserved.
      expect(quantity(named('Deployment', 'transcode').spec.template.spec.containers[0].resources.requests['ephemeral-storage'])).toBeGreaterThanOrEqual(
        20 * 1024 * MiB,
      );
    });

    it("gives upload's /tmp room for every part the tus store keeps on disk at once (the store upload builds, asked in a child process)", () => {
      const upload = named('Deployment', 'upload');
      const env = envOf(upload.spec.template.spec.containers[0]);
      const tmp = upload.spec.template.spec.volumes.find(
        (v: any) => v.name === upload.spec.template.spec.containers[0].volumeMounts.find((m: any) => m.mountPath === '/tmp').name,
      );
      const probe = [
        "const { loadUploadConfig } = require('./services/upload/src/config');",
        "const { createTusStore } = require('./services/upload/src/adapters/tus-store');",
        `const config = loadUploadConfig(${JSON.stringify(env)});`,
        "const store = createTusStore({ endpoint: 'http://127.0.0.1:1', bucket: 'b', accessKey: 'a', secretKey: 's' }, { expiryMs: 1000, partSize: config.TUS_PART_SIZE });",
        // A part is cut at the size calcOptimalPartSize gives: for a known length up to MAX_UPLOAD_BYTES, or a deferred one.
        'const part = Math.max(store.calcOptimalPartSize(config.MAX_UPLOAD_BYTES), store.calcOptimalPartSize(undefined));',
        'console.log(JSON.stringify({ parts: store.partUploadSemaphore.availablePermits, part }));',
      ].join('\n');
      const out = (spooled[`${env.MAX_UPLOAD_BYTES}|${env.TUS_PART_SIZE}`] ??= execFileSync(process.execPath, ['--import', 'tsx', '-e', probe], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '' },
      }));
      const { parts, part } = JSON.parse(out.trim().split('\n').pop() as string) as { parts: number; part: number };
      const spool = parts * part;
      console.log(`${overlay}: upload spools up to ${parts} parts × ${part / MiB} MiB = ${spool / MiB} MiB in /tmp (sizeLimit ${tmp.emptyDir.sizeLimit})`);
      expect(spool).toBeGreaterThan(0);
      expect(quantity(tmp.emptyDir.sizeLimit)).toBeGreaterThanOrEqual(spool);
    });
  });

  it('D5: the NATS pods reload a changed dam-nats-auth themselves (auth-reloader sidecar, the Secret mounted as a folder)', () => {
    const pod = named('StatefulSet', 'nats').spec.template.spec;
    expect(pod.shareProcessNamespace).toBe(true);
    const [server, reloader] = pod.containers;
    expect(reloader?.name).toBe('auth-reloader');
    const authVolume = pod.volumes.find((v: any) => v.secret?.secretName === 'dam-nats-auth').name;
    for (const c of [server, reloader]) {
      const mount = c.volumeMounts.find((m: any) => m.name === authVolume);
      // A subPath mount never sees the kubelet's update of the Secret.
      expect([c.name, mount?.mountPath, mount?.subPath]).toEqual([c.name, '/etc/nats/auth', undefined]);
    }
    const pidDir = /pid_file:\s*(\S+)/.exec(named('ConfigMap', 'nats-config').data['nats.conf'])?.[1]?.replace(/\/[^/]+$/, '');
    expect(reloader.volumeMounts.map((m: any) => m.mountPath)).toContain(pidDir);
    expect(reloader.command.join(' ')).toContain('--signal reload=');
  });

  it('D12: gives every service (and NATS and MinIO) a startupProbe covering a first install; liveness stays short', () => {
    for (const o of podsOf(objects).filter((x) => x.metadata.name !== 'postgres')) {
      const [c] = o.spec.template.spec.containers;
      const spec = SERVICES.find((s) => s.name === o.metadata.name);
      const budget = (p: any) => (p?.periodSeconds ?? 10) * (p?.failureThreshold ?? 3) + (p?.initialDelaySeconds ?? 0);
      const wanted = FIRST_INSTALL_SECONDS + (spec?.startupSeconds ?? 0);
      expect([o.metadata.name, Boolean(c.startupProbe), budget(c.startupProbe) >= wanted]).toEqual([o.metadata.name, true, true]);
      // On the port liveness uses: once it answers, liveness takes over.
      expect([o.metadata.name, c.startupProbe.httpGet?.port]).toEqual([o.metadata.name, c.livenessProbe.httpGet?.port]);
      if (spec) expect([o.metadata.name, budget(c.livenessProbe) <= LIVENESS_MAX_SECONDS]).toEqual([o.metadata.name, true]);
    }
  });

  describe('the database: TLS with a mounted CA, and pools that fit max_connections', () => {
    const readsDatabaseUrl = (c: any) => (c.env ?? []).some((e: any) => e.name === 'DATABASE_URL');

    it('mounts the optional Secret dam-db-ca read-only at /etc/dam/db-ca wherever DATABASE_URL is read (init containers too)', () => {
      let mounts = 0;
      for (const o of podsOf(objects)) {
        for (const c of containersOf(o).filter(readsDatabaseUrl)) {
          const m = (c.volumeMounts ?? []).find((x: any) => x.mountPath === '/etc/dam/db-ca');
          const v = o.spec.template.spec.volumes.find((x: any) => x.name === m?.name);
          expect([o.metadata.name, c.name, m?.readOnly, v?.secret]).toEqual([o.metadata.name, c.name, true, { secretName: 'dam-db-ca', optional: true }]);
          mounts += 1;
        }
      }
      expect(mounts).toBe(2 * SERVICES.filter((s) => s.database).length);
    });

    if (overlay === 'prod') {
      it('documents a DATABASE_URL that verifies the server with that CA', () => {
        const text = readFileSync(path.join(ROOT, 'k8s', 'overlays', 'prod', 'kustomization.yaml'), 'utf8');
        const url = /--database-url '([^']+)'/.exec(text)?.[1] ?? '';
        expect(new URL(url).searchParams.get('sslmode')).toBe('verify-full');
        expect(new URL(url).searchParams.get('sslrootcert')).toBe('/etc/dam/db-ca/ca.crt');
      });
    }

    // At every database service's maximum replicas, with one surge pod each during a rollout (and its migrate init
    // container), plus KEDA's postgresql triggers: DB_POOL_MAX per process (10, the code's default, when unset).
    const budget = podsOf(objects)
      .filter((o) => o.kind === 'Deployment' && containersOf(o).some(readsDatabaseUrl))
      .map((d) => {
        const name = d.metadata.name as string;
        const hpa = named('HorizontalPodAutoscaler', name)?.spec.maxReplicas;
        const keda = named('ScaledObject', name);
        const replicas: number = hpa ?? keda?.spec.maxReplicaCount ?? d.spec.replicas ?? 1;
        const surge = Number(d.spec.strategy?.rollingUpdate?.maxSurge ?? 1);
        const pool = Number(envOf(d.spec.template.spec.containers[0]).DB_POOL_MAX ?? 10);
        const init = initContainersOf(d).filter(readsDatabaseUrl).length;
        const scaler = (keda?.spec.triggers ?? []).filter((t: any) => t.type === 'postgresql').length;
        return { name, replicas, surge, pool, connections: (replicas + surge) * pool + surge * init + scaler };
      });
    const total = budget.reduce((n, b) => n + b.connections, 0);

    it(`needs ${total} PostgreSQL connections at the maximum replicas, within ${CONNECTION_BUDGET[overlay]}`, () => {
      console.log(
        `${overlay}: connection budget ${total} = ${budget.map((b) => `${b.name} (${b.replicas}+${b.surge})×${b.pool}`).join(' + ')} + init containers and KEDA`,
      );
      expect(budget.map((b) => b.name).sort()).toEqual(
        SERVICES.filter((s) => s.database)
          .map((s) => s.name)
          .sort(),
      );
      for (const b of budget) expect([b.name, Number.isInteger(b.pool) && b.pool >= 1 && b.pool <= 100]).toEqual([b.name, true]);
      expect(total).toBeLessThanOrEqual(CONNECTION_BUDGET[overlay] ?? 0);
    });
  });

  it('presigns object_storage links for the dam-s3 host clients reach (S3_PUBLIC_ENDPOINT)', () => {
    const host = named('Ingress', 'dam-s3').spec.rules[0].host;
    expect(config.data.S3_PUBLIC_ENDPOINT).toBe(`https://${host}`);
    // Metadata's presigned URLs for the gateway stay on the internal endpoint.
    expect(config.data.S3_ENDPOINT).toBe('http://minio:9000');
    for (const d of podsOf(objects))
      expect([d.metadata.name, envOf(d.spec.template.spec.containers[0]).S3_ENDPOINT ?? 'http://minio:9000']).toEqual([d.metadata.name, 'http://minio:9000']);
  });

  it("D9: shares each edge's rate limits over its ready replicas (RATE_LIMIT_PEERS names a headless Service of its own pods)", () => {
    const edges = SERVICES.filter((sv) => sv.public);
    expect(edges.map((e) => e.name).sort()).toEqual(['gateway', 'link-signing', 'upload']);
    for (const edge of edges) {
      const d = named('Deployment', edge.name);
      const peers = envOf(d.spec.template.spec.containers[0]).RATE_LIMIT_PEERS;
      const svc = named('Service', peers ?? '(none)');
      expect([edge.name, svc?.spec.clusterIP, svc?.spec.publishNotReadyAddresses ?? false]).toEqual([edge.name, 'None', false]);
      // Exactly the edge's own pods: another workload's would inflate the count and shrink every share.
      for (const w of podsOf(objects))
        expect([edge.name, w.metadata.name, selects({ matchLabels: svc.spec.selector }, podLabels(w))]).toEqual([
          edge.name,
          w.metadata.name,
          w.metadata.name === edge.name,
        ]);
    }
  });

  it("names the cluster domain once (dam-cluster's CLUSTER_DOMAIN) and the namespace only through kustomize", () => {
    const namespace = overlay === 'dev' ? 'dam-dev' : 'dam';
    const cluster = named('ConfigMap', 'dam-cluster');
    for (const o of objects) {
      const text = JSON.stringify(o === cluster ? { ...o, data: { ...o.data, CLUSTER_DOMAIN: undefined } } : o);
      expect([o.kind, o.metadata.name, text.includes('cluster.local')]).toEqual([o.kind, o.metadata.name, false]);
    }
    expect(cluster.data.CLUSTER_DOMAIN).toBe('cluster.local');
    const minio = named('StatefulSet', 'minio').spec.template.spec.containers[0];
    expect(minio.env.find((e: any) => e.name === 'CLUSTER_DOMAIN')?.valueFrom?.configMapKeyRef).toEqual({ name: 'dam-cluster', key: 'CLUSTER_DOMAIN' });
    for (const so of objects.filter((o) => o.kind === 'ScaledObject'))
      expect(so.spec.triggers[0].metadata.natsServerMonitoringEndpoint).toBe(`nats.${namespace}.svc:8222`);
  });

  it("admits the cluster's parts (ingress controller, Prometheus, KEDA) from the namespaces dam-cluster names, and an overlay changes them in one place", () => {
    const settings = named('ConfigMap', 'dam-cluster').data;
    expect(settings).toMatchObject({ INGRESS_NAMESPACE: 'ingress-nginx', MONITORING_NAMESPACE: 'monitoring', KEDA_NAMESPACE: 'keda' });
    // Every namespace peer of every policy is one of those settings, named by the policy's label.
    const peers = (objs: any[]) =>
      objs
        .filter((o) => o.kind === 'NetworkPolicy')
        .flatMap((p) =>
          (p.spec.ingress ?? []).flatMap((r: any) =>
            (r.from ?? [])
              .filter((f: any) => f.namespaceSelector)
              .map((f: any) => [p.metadata.name, p.metadata.labels?.['dam/from-namespace'], f.namespaceSelector.matchLabels['kubernetes.io/metadata.name']]),
          ),
        );
    const found = peers(objects);
    expect(found.length).toBeGreaterThanOrEqual(3);
    for (const [name, key, value] of found) expect([name, key, value]).toEqual([name, key, settings[key]]);
    // An overlay of its own on top of this one, with other namespaces merged into dam-cluster and the replacements
    // repeated (they run where the values are set): every policy follows.
    const own = { INGRESS_NAMESPACE: 'gateway-system', MONITORING_NAMESPACE: 'observability', KEDA_NAMESPACE: 'autoscaling', CLUSTER_DOMAIN: 'corp.internal' };
    const { replacements } = parse(readFileSync(path.join(ROOT, 'k8s', 'overlays', overlay, 'kustomization.yaml'), 'utf8'));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-overlay-'));
    try {
      writeFileSync(
        path.join(dir, 'kustomization.yaml'),
        stringify({
          resources: [path.relative(dir, path.join(ROOT, 'k8s', 'overlays', overlay))],
          configMapGenerator: [
            { name: 'dam-cluster', behavior: 'merge', options: { disableNameSuffixHash: true }, literals: Object.entries(own).map(([k, v]) => `${k}=${v}`) },
          ],
          replacements,
        }),
      );
      const rebuilt = parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' }))
        .map((d) => d.toJSON())
        .filter(Boolean);
      const moved = peers(rebuilt);
      expect(moved.length).toBe(found.length);
      for (const [name, key, value] of moved) expect([name, key, value]).toEqual([name, key, own[key as keyof typeof own]]);
      expect(find(rebuilt, 'ConfigMap', 'dam-cluster').data.CLUSTER_DOMAIN).toBe('corp.internal');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('D8: the prod overlay spreads the replicas of each workload', () => {
  const objects = build('prod');
  const pods = podsOf(objects);
  const termsOf = (o: any): Array<{ required: boolean; term: any }> => {
    const anti = o.spec.template.spec.affinity?.podAntiAffinity ?? {};
    return [
      ...(anti.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term: any) => ({ required: true, term })),
      ...(anti.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((p: any) => ({ required: false, term: p.podAffinityTerm })),
    ];
  };
  const onlyItself = (o: any, selector: any) => pods.filter((p) => selects(selector, podLabels(p))).map((p) => p.metadata.name);

  it("keeps two pods of one workload off one node, counting only that workload's pods (never every DAM pod)", () => {
    for (const o of pods) {
      const terms = termsOf(o);
      expect([o.metadata.name, terms.length > 0]).toEqual([o.metadata.name, true]);
      for (const { term } of terms) {
        expect([o.metadata.name, term.topologyKey, onlyItself(o, term.labelSelector)]).toEqual([o.metadata.name, 'kubernetes.io/hostname', [o.metadata.name]]);
      }
    }
  });

  it('requires one NATS pod and one MinIO pod per node (3 and 4 nodes), so losing a node loses one replica of each', () => {
    for (const name of ['nats', 'minio']) {
      const required = termsOf(find(objects, 'StatefulSet', name)).filter((t) => t.required);
      expect([name, required.map((t) => [t.term.topologyKey, onlyItself(null, t.term.labelSelector)])]).toEqual([name, [['kubernetes.io/hostname', [name]]]]);
    }
  });

  it('spreads every workload over zones and nodes by its own pods', () => {
    for (const o of pods) {
      const constraints = o.spec.template.spec.topologySpreadConstraints ?? [];
      expect([o.metadata.name, constraints.map((c: any) => c.topologyKey).sort()]).toEqual([
        o.metadata.name,
        ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'],
      ]);
      for (const c of constraints)
        expect([o.metadata.name, c.topologyKey, onlyItself(o, c.labelSelector)]).toEqual([o.metadata.name, c.topologyKey, [o.metadata.name]]);
    }
  });
});

function find(objects: any[], kind: string, name: string): any {
  return objects.find((o) => o.kind === kind && o.metadata.name === name);
}
