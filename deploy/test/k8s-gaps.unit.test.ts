/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The Kubernetes review's "other gaps" (2026-11-27) that live in the manifests, checked on both rendered overlays
 * (issue 31): one ServiceAccount per workload without an API token, KEDA's fallback, PriorityClasses for the
 * infrastructure and the services, upload's CORS limited to the console's origin (following the overlay's
 * PUBLIC_BASE_URL), no variable or Secret key that its service never reads, and dam-config's content in its name so
 * a change rolls the pods that read it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { generateSecrets } from '../k8s/secrets';
import { SERVICES, type ServiceName } from '../k8s/services';
import { build, containersOf, OVERLAYS, podsOf, ROOT, workloadsOf, type Overlay } from './k8s-render';
import { CONFIG_LOADERS } from './config-loaders';

/**
 * Variables read outside the services' schemas, by the code every service runs: libs/http (TRUST_PROXY,
 * METRICS_PUBLIC, GC_INCREMENTAL_MARKING), libs/telemetry (OTEL_*), libs/auth-tokens (SERVICE_TOKEN_BODY_BINDING),
 * libs/db (NODE_EXTRA_CA_CERTS), Node itself (TMPDIR: os.tmpdir()). `grep process.env` over libs/ finds them;
 * the test below checks the list against it.
 */
const READ_OUTSIDE_SCHEMAS = ['TRUST_PROXY', 'METRICS_PUBLIC', 'GC_INCREMENTAL_MARKING', 'SERVICE_TOKEN_BODY_BINDING', 'NODE_EXTRA_CA_CERTS', 'TMPDIR'];
const readOutsideSchemas = (key: string) => READ_OUTSIDE_SCHEMAS.includes(key) || key.startsWith('OTEL_');
/** dam-config keys read by kustomize rather than a service: the hosts of the Gateway API component and upload's CORS. */
const READ_BY_KUSTOMIZE = ['PUBLIC_BASE_URL'];

const secrets = generateSecrets();
const secretData = (name: string): Record<string, string> | undefined => secrets.find((s) => s.metadata.name === name)?.stringData;

/** The keys a service's config loader reads from an environment (a Proxy records every key asked for). */
function keysRead(name: ServiceName, env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, key, receiver) {
      if (typeof key === 'string') read.add(key);
      return Reflect.get(target, key, receiver);
    },
  });
  CONFIG_LOADERS[name](proxy);
  return read;
}

/** An overlay of our own on top of one of the repo's: these dam-config values merged in, its replacements repeated. */
function buildDerived(overlay: Overlay, literals: Record<string, string>): any[] {
  const { replacements } = parse(readFileSync(path.join(ROOT, 'k8s', 'overlays', overlay, 'kustomization.yaml'), 'utf8'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-gaps-overlay-'));
  try {
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      stringify({
        resources: [path.relative(dir, path.join(ROOT, 'k8s', 'overlays', overlay))],
        configMapGenerator: [{ name: 'dam-config', behavior: 'merge', literals: Object.entries(literals).map(([k, v]) => `${k}=${v}`) }],
        replacements,
      }),
    );
    return parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' }))
      .map((d) => d.toJSON())
      .filter(Boolean);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const find = (objects: any[], kind: string, name: string): any => objects.find((o) => o.kind === kind && o.metadata.name === name);
const damConfigOf = (objects: any[]): any => objects.find((o) => o.kind === 'ConfigMap' && /^dam-config(-[a-z0-9]{10})?$/.test(o.metadata.name));
const envOf = (objects: any[], c: any): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const f of c.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', f.configMapRef?.name)?.data ?? {});
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    env[e.name] = e.value ?? (ref ? secretData(ref.name)?.[ref.key] : undefined) ?? '';
  }
  return env;
};

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const named = (kind: string, name: string) => find(objects, kind, name);

  it('runs every workload as a ServiceAccount of its own, with no API token mounted', () => {
    const workloads = workloadsOf(objects);
    expect(workloads.length).toBeGreaterThanOrEqual(SERVICES.length + 3);
    const accounts = workloads.map((o) => o.spec.template.spec.serviceAccountName);
    for (const o of workloads) {
      const pod = o.spec.template.spec;
      const account = named('ServiceAccount', pod.serviceAccountName ?? 'default');
      expect([o.kind, o.metadata.name, pod.serviceAccountName, account?.automountServiceAccountToken, pod.automountServiceAccountToken]).toEqual([
        o.kind,
        o.metadata.name,
        `dam-${o.metadata.name}`,
        false,
        false,
      ]);
    }
    // One workload per account: none shares another's identity (or its pull secrets, RBAC, cloud role).
    expect(new Set(accounts).size).toBe(accounts.length);
    // No ServiceAccount nobody runs as.
    expect(
      objects
        .filter((o) => o.kind === 'ServiceAccount')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual([...accounts].sort());
  });

  it("gives every ScaledObject a fallback (3 failed reads → the overlay's minimum) and a gentle scale-in", () => {
    const scaled = objects.filter((o) => o.kind === 'ScaledObject');
    expect(scaled.map((o) => o.metadata.name).sort()).toEqual(['addon', 'conversion', 'transcode', 'webhook']);
    for (const o of scaled) {
      const { fallback, minReplicaCount, maxReplicaCount, advanced } = o.spec;
      expect([o.metadata.name, fallback?.failureThreshold, fallback?.replicas]).toEqual([o.metadata.name, 3, minReplicaCount]);
      expect(fallback.replicas).toBeGreaterThanOrEqual(1);
      expect(fallback.replicas).toBeLessThanOrEqual(maxReplicaCount);
      // KEDA's fallback works only with AverageValue targets (the default metricType).
      for (const t of o.spec.triggers) expect([o.metadata.name, t.type, t.metricType ?? 'AverageValue']).toEqual([o.metadata.name, t.type, 'AverageValue']);
      const scaleDown = advanced?.horizontalPodAutoscalerConfig?.behavior?.scaleDown;
      expect([o.metadata.name, scaleDown?.stabilizationWindowSeconds >= 60, scaleDown?.policies?.length > 0]).toEqual([o.metadata.name, true, true]);
    }
    if (overlay === 'prod')
      expect(Object.fromEntries(scaled.map((o) => [o.metadata.name, o.spec.fallback.replicas]))).toEqual({ addon: 1, conversion: 2, transcode: 2, webhook: 2 });
  });

  it("schedules NATS, MinIO (and dev's PostgreSQL) at dam-infrastructure, the services at dam-services; cluster-scoped", () => {
    const classes = objects.filter((o) => o.kind === 'PriorityClass');
    expect(classes.map((c) => c.metadata.name).sort()).toEqual(['dam-infrastructure', 'dam-services']);
    for (const c of classes) {
      // Survives the overlay's namespace transformer without a namespace (a PriorityClass has none).
      expect([c.metadata.name, c.metadata.namespace]).toEqual([c.metadata.name, undefined]);
      // Above the default (0), below the system's (user classes may not pass 1000000000), never the cluster's default.
      expect([c.metadata.name, c.value > 0 && c.value <= 1_000_000_000, c.globalDefault]).toEqual([c.metadata.name, true, false]);
    }
    const infrastructure = named('PriorityClass', 'dam-infrastructure');
    const services = named('PriorityClass', 'dam-services');
    expect(infrastructure.value).toBeGreaterThan(services.value);
    expect(infrastructure.preemptionPolicy).toBe('PreemptLowerPriority');
    // Autoscaled workers never evict other pods to get room.
    expect(services.preemptionPolicy).toBe('Never');
    const infra = ['nats', 'minio', ...(overlay === 'dev' ? ['postgres'] : [])];
    for (const o of workloadsOf(objects)) {
      expect([o.metadata.name, o.spec.template.spec.priorityClassName]).toEqual([
        o.metadata.name,
        infra.includes(o.metadata.name) ? 'dam-infrastructure' : 'dam-services',
      ]);
    }
  });

  describe("upload's CORS: browsers upload from the console only", () => {
    const corsOf = (objs: any[]) => envOf(objs, find(objs, 'Deployment', 'upload').spec.template.spec.containers[0]).CORS_ALLOWED_ORIGINS;

    it('allows exactly the origin of PUBLIC_BASE_URL (the console), in the comma-separated list upload parses', () => {
      const base = damConfigOf(objects).data.PUBLIC_BASE_URL;
      const cors = corsOf(objects);
      expect(cors).toBe(new URL(base).origin);
      expect(cors).toBe(overlay === 'dev' ? 'https://dam.dev.example.com' : 'https://dam.example.com');
      // Upload's own loader takes it, and it is not the default `*`.
      const config = CONFIG_LOADERS.upload(envOf(objects, find(objects, 'Deployment', 'upload').spec.template.spec.containers[0])) as {
        CORS_ALLOWED_ORIGINS: string;
      };
      expect(config.CORS_ALLOWED_ORIGINS.split(',').map((o) => o.trim())).toEqual([new URL(base).origin]);
    });

    it("follows an overlay's PUBLIC_BASE_URL (a kustomize replacement from dam-config), also one written with a path", () => {
      const moved = buildDerived(overlay, { PUBLIC_BASE_URL: 'https://assets.corp.example.org/' });
      expect(damConfigOf(moved).data.PUBLIC_BASE_URL).toBe('https://assets.corp.example.org/');
      expect(corsOf(moved)).toBe('https://assets.corp.example.org');
    });
  });

  describe('config hygiene: nothing a service never reads', () => {
    it('gives each service only variables and Secret keys its configuration (or the shared code) reads', () => {
      const unread: string[] = [];
      for (const s of SERVICES) {
        const [main] = named('Deployment', s.name).spec.template.spec.containers;
        const read = keysRead(s.name, envOf(objects, main));
        const own: string[] = (main.env ?? []).map((e: any) => e.name as string);
        unread.push(...own.filter((k) => !read.has(k) && !readOutsideSchemas(k)).map((k) => `${s.name}: env ${k}`));
        // Its Secret holds nothing the service does not read either.
        unread.push(
          ...Object.keys(secretData(`dam-${s.name}`) ?? {})
            .filter((k) => !read.has(k))
            .map((k) => `${s.name}: dam-${s.name}/${k}`),
        );
      }
      expect(unread).toEqual([]);
    });

    it("reads every key of dam-config somewhere (a service, the shared code, or kustomize's host replacements)", () => {
      const config = damConfigOf(objects);
      const readBy = new Map<string, string[]>();
      for (const s of SERVICES) {
        const [main] = named('Deployment', s.name).spec.template.spec.containers;
        for (const k of keysRead(s.name, envOf(objects, main))) readBy.set(k, [...(readBy.get(k) ?? []), s.name]);
      }
      const unread = Object.keys(config.data).filter((k) => !readBy.has(k) && !readOutsideSchemas(k) && !READ_BY_KUSTOMIZE.includes(k));
      expect(unread).toEqual([]);
      // The exception is used: the overlay's replacements read PUBLIC_BASE_URL.
      const text = readFileSync(path.join(ROOT, 'k8s', 'overlays', overlay, 'kustomization.yaml'), 'utf8');
      expect(text).toContain('fieldPath: data.PUBLIC_BASE_URL');
    });

    it("knows the shared code's own reads (grep of process.env over libs/)", () => {
      const out = execFileSync(
        'grep',
        [
          '-rhoE',
          "(process\\.env|env)(\\.|\\[')[A-Z][A-Z0-9_]+",
          'libs/http/src',
          'libs/telemetry/src',
          'libs/auth-tokens/src',
          'libs/db/src',
          '--include=*.ts',
          '--exclude=*.test.ts',
        ],
        {
          cwd: ROOT,
          encoding: 'utf8',
        },
      );
      const keys = [
        ...new Set(
          out
            .split('\n')
            .filter(Boolean)
            .map((l) => l.replace(/^.*[.[']/, '')),
        ),
      ];
      expect(keys.filter((k) => !readOutsideSchemas(k) && k !== 'DATABASE_URL')).toEqual([]);
    });
  });

  it('names dam-config after its content (configMapGenerator), so a changed value rolls every pod that reads it', () => {
    const config = damConfigOf(objects);
    expect(config.metadata.name).toMatch(/^dam-config-[a-z0-9]{10}$/);
    const readers = workloadsOf(objects).filter((o) =>
      containersOf(o).some((c) => (c.envFrom ?? []).some((f: any) => f.configMapRef?.name?.startsWith('dam-config'))),
    );
    expect(readers.length).toBeGreaterThanOrEqual(SERVICES.length);
    for (const o of readers)
      for (const c of containersOf(o))
        for (const f of c.envFrom ?? []) expect([o.metadata.name, c.name, f.configMapRef.name]).toEqual([o.metadata.name, c.name, config.metadata.name]);
    // Another value: another name, so the pod templates of its readers change (a rollout); the replacements still
    // find it (upload's CORS follows) and the other ConfigMaps keep their names.
    const changed = buildDerived(overlay, { LOG_LEVEL: 'warn' });
    const other = damConfigOf(changed);
    expect(other.metadata.name).not.toBe(config.metadata.name);
    expect(find(changed, 'Deployment', 'gateway').spec.template.spec.containers[0].envFrom[0].configMapRef.name).toBe(other.metadata.name);
    expect(find(changed, 'ConfigMap', 'dam-cluster')).toBeDefined();
    expect(podsOf(changed).length).toBe(podsOf(objects).length);
  });
});
