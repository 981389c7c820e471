/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * Egress NetworkPolicies (issue 31, the review's "other gaps": "No egress NetworkPolicies"), checked on both rendered
 * overlays with the evaluator of deploy/k8s/network-policy-eval.ts: every pod is isolated for egress; the flows the
 * code declares (the `*_URL`, NATS_URL and DATABASE_URL its configuration reads, a storage client or a presigned
 * fetch, the outbound guard's requests) are admitted, DNS too; every other connection between the workloads is
 * refused by egress alone, as are the private ranges, the Kubernetes API and other namespaces. The database outside
 * the cluster (prod) and the OpenTelemetry collector's namespace are overlay settings.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { isForbiddenAddress } from '../../libs/http/src/outbound-address';
import { PRIVATE_IPV4, PRIVATE_IPV6 } from '../k8s/egress';
import { describeVerdict, evaluateFlow, foreignPod, inCidr, serviceTargets, workloadPod, type Endpoint, type Flow } from '../k8s/network-policy-eval';
import { generateSecrets } from '../k8s/secrets';
import { SERVICES, type ServiceName } from '../k8s/services';
import { CONFIG_LOADERS } from './config-loaders';
import { build, OVERLAYS, ROOT, workloadsOf, type Overlay } from './k8s-render';

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

/** The keys a service's config loader reads (a Proxy records every key asked for). */
function keysRead(name: ServiceName, env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  CONFIG_LOADERS[name](
    new Proxy(env, {
      get(target, key, receiver) {
        if (typeof key === 'string') read.add(key);
        return Reflect.get(target, key, receiver);
      },
    }),
  );
  return read;
}
const envOf = (objects: any[], c: any): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const f of c.envFrom ?? []) Object.assign(env, objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === f.configMapRef?.name)?.data ?? {});
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    env[e.name] = e.value ?? (ref ? secretData(ref.name)?.[ref.key] : undefined) ?? '';
  }
  return env;
};

/**
 * What each service connects to, read from its code, not from services.ts: the services whose URL its configuration
 * reads (`AUTH_URL` → auth), NATS (NATS_URL), PostgreSQL (DATABASE_URL), the object store (a storage client of its
 * own, or the gateway's presigned fetch: ACCEL), the internet (libs/http's guarded requests).
 */
function declaredByCode(objects: any[]): Map<ServiceName, { calls: string[]; nats: boolean; database: boolean; objectStore: boolean; internet: boolean }> {
  const names = new Map(SERVICES.map((s) => [`${s.name.replace(/-/g, '_').toUpperCase()}_URL`, s.name]));
  return new Map(
    SERVICES.map((s) => {
      const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === s.name);
      const read = keysRead(s.name, envOf(objects, deployment.spec.template.spec.containers[0]));
      const main = readFileSync(path.join(ROOT, 'services', s.name, 'src', 'main.ts'), 'utf8');
      const source = serviceSource(s.name);
      return [
        s.name,
        {
          calls: [...read].flatMap((k) => (names.has(k) ? [names.get(k) as string] : [])).sort(),
          nats: read.has('NATS_URL'),
          database: read.has('DATABASE_URL'),
          objectStore: /storageConfigFromEnv\(/.test(main) || /headers\[ACCEL\.redirect\]/.test(source),
          internet: /\b(openGuardedDownload|guardedPost)\(/.test(source),
        },
      ];
    }),
  );
}

const outside = (ip: string): Endpoint => ({ kind: 'external', name: ip, ip });
const DNS = foreignPod('kube-system', { 'k8s-app': 'kube-dns' });
/** Where a managed database is in the prod overlay's placeholder (a documentation range: the flow checks' "managed database" too). */
const MANAGED_DATABASE = '198.51.100.20';
const PUBLIC_V4 = '203.0.113.7';
const PUBLIC_V6 = '2606:4700:4700::1111';

describe('the ranges egress-to-internet leaves out', () => {
  const last = (cidr: string): string => {
    const [base, bits] = cidr.split('/') as [string, string];
    if (!base.includes(':')) {
      const n = base.split('.').reduce((a, p) => a * 256 + Number(p), 0) + 2 ** (32 - Number(bits)) - 1;
      return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
    }
    // The first group holds every prefix used here (≤ 16 bits): set its free bits and every later group.
    const first = parseInt(base.split(':')[0] as string, 16) | (0xffff >> Number(bits));
    return [first.toString(16), ...Array<string>(7).fill('ffff')].join(':');
  };

  it('are all refused by the outbound guard too (the policy never blocks a delivery the guard would make)', () => {
    for (const cidr of [...PRIVATE_IPV4, ...PRIVATE_IPV6]) {
      const [base] = cidr.split('/') as [string];
      expect([cidr, isForbiddenAddress(base), isForbiddenAddress(last(cidr)), inCidr(last(cidr), cidr)]).toEqual([cidr, true, true, true]);
    }
  });

  it("hold the cluster's and the cloud's private ranges", () => {
    const held = (ip: string) => [...PRIVATE_IPV4, ...PRIVATE_IPV6].some((c) => inCidr(ip, c));
    for (const ip of [
      '10.0.0.5',
      '172.16.0.1',
      '172.31.255.254',
      '192.168.1.1',
      '169.254.169.254',
      '127.0.0.1',
      '100.64.0.10',
      'fd00:ec2::254',
      'fe80::1',
      'fc00::1',
    ])
      expect([ip, held(ip)]).toEqual([ip, true]);
    for (const ip of [PUBLIC_V4, '8.8.8.8', '172.32.0.1', PUBLIC_V6]) expect([ip, held(ip)]).toEqual([ip, false]);
  });
});

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const declared = declaredByCode(objects);
  const pod = (name: string): Endpoint => {
    const p = workloadPod(objects, name);
    if (!p) throw new Error(`no workload ${name}`);
    return p;
  };
  const verdict = (from: string, to: Endpoint, port: number, protocol: Flow['protocol'] = 'TCP') =>
    evaluateFlow(objects, { from: pod(from), to, port, protocol });
  const services = SERVICES.map((s) => s.name);

  it('declares in deploy/k8s/services.ts what the code does (callers, nats, database, object store, internet)', () => {
    for (const s of SERVICES) {
      const d = declared.get(s.name);
      const callees = SERVICES.filter((x) => x.callers.includes(s.name))
        .map((x) => x.name)
        .sort();
      expect([s.name, d]).toEqual([
        s.name,
        { calls: callees, nats: !!s.nats, database: !!s.database, objectStore: !!(s.s3 || s.fetchesPresigned), internet: !!s.internet },
      ]);
    }
    expect(
      SERVICES.filter((s) => s.internet)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['upload', 'webhook']);
  });

  it('isolates every pod (Deployments, StatefulSets, the Job) for egress', () => {
    const workloads = workloadsOf(objects);
    expect(workloads.length).toBe(overlay === 'dev' ? 15 : 14);
    for (const w of workloads) {
      const d = verdict(w.metadata.name, outside(PUBLIC_V4), 443).egress;
      expect([w.metadata.name, d.isolated]).toEqual([w.metadata.name, true]);
    }
  });

  it('admits exactly the declared connections between its workloads, and egress alone refuses every other', () => {
    const expected = new Set<string>();
    for (const [name, d] of declared) {
      for (const callee of d.calls) expected.add(`${name} -> ${callee}:8080`);
      if (d.nats) expected.add(`${name} -> nats:4222`);
      if (d.objectStore) expected.add(`${name} -> minio:9000`);
      if (d.database && overlay === 'dev') expected.add(`${name} -> postgres:5432`);
    }
    for (const e of ['nats -> nats:4222', 'nats -> nats:6222', 'minio -> minio:9000', 'minio-users -> minio:9000']) expected.add(e);
    // The {cdn} cache tier: its one upstream, and the edge's purges to it (issue 33).
    for (const e of ['cdn-cache -> link-signing:8080', 'link-signing -> cdn-cache:8081']) expected.add(e);
    // Every pod behind every port of every Service of the overlay.
    const destinations = new Map<string, { pod: Endpoint; port: number }>();
    for (const svc of objects.filter((o) => o.kind === 'Service' && o.spec?.selector)) {
      for (const p of svc.spec.ports) for (const t of serviceTargets(objects, svc.metadata.name, p.port)) destinations.set(`${t.pod.name}:${t.port}`, t);
    }
    const admitted: string[] = [];
    const refused: string[] = [];
    for (const w of workloadsOf(objects)) {
      for (const [key, { pod: to, port }] of destinations) {
        const flow = `${w.metadata.name} -> ${key}`;
        const v = verdict(w.metadata.name, to, port);
        if (expected.has(flow)) {
          if (!v.admitted) admitted.push(describeVerdict({ from: pod(w.metadata.name), to, port }, v));
        } else if (!v.egress.isolated || v.egress.by.length > 0) refused.push(flow);
      }
    }
    expect(expected.size).toBeGreaterThan(30);
    expect({ notAdmitted: admitted, notRefusedByEgress: refused }).toEqual({ notAdmitted: [], notRefusedByEgress: [] });
    // The review's examples, by name.
    for (const [from, to, port] of [
      ['link-signing', 'postgres', 5432],
      ['search', 'minio', 9000],
      ['webhook', 'metadata', 8080],
      ['addon', 'auth', 8080],
      ['gateway', 'nats', 8222],
    ] as const) {
      const target = workloadPod(objects, to);
      if (target) expect([from, to, verdict(from, target, port).egress]).toMatchObject([from, to, { isolated: true, by: [] }]);
    }
  });

  it('gives every pod the cluster DNS (kube-dns in kube-system, UDP and TCP 53), and nothing else there', () => {
    for (const w of workloadsOf(objects)) {
      const name = w.metadata.name;
      expect([name, verdict(name, DNS, 53, 'UDP').admitted, verdict(name, DNS, 53, 'TCP').admitted]).toEqual([name, true, true]);
      expect([name, verdict(name, foreignPod('kube-system', { component: 'kube-apiserver' }), 53, 'UDP').admitted]).toEqual([name, false]);
      expect([name, verdict(name, foreignPod('tenant', { 'k8s-app': 'kube-dns' }), 53, 'UDP').admitted]).toEqual([name, false]);
      expect([name, verdict(name, DNS, 443).admitted]).toEqual([name, false]);
    }
  });

  it('lets no workload reach the Kubernetes API (private endpoints, kube-system pods) or another namespace', () => {
    for (const w of workloadsOf(objects)) {
      const name = w.metadata.name;
      for (const [to, port] of [
        [outside('10.0.0.1'), 443],
        [outside('172.20.0.10'), 6443],
        [outside('192.168.49.2'), 8443],
        [foreignPod('kube-system', { component: 'kube-apiserver' }), 443],
      ] as const) {
        expect([name, to.name, verdict(name, to, port).admitted]).toEqual([name, to.name, false]);
      }
      expect([name, verdict(name, foreignPod('tenant', { 'app.kubernetes.io/name': 'metadata' }), 8080).admitted]).toEqual([name, false]);
    }
  });

  it('lets webhook and upload reach public addresses on any TCP port, never the private ranges; nobody else reaches the internet', () => {
    for (const name of ['webhook', 'upload']) {
      for (const [ip, port] of [
        [PUBLIC_V4, 443],
        [PUBLIC_V4, 80],
        [PUBLIC_V4, 8443],
        ['8.8.8.8', 443],
        [PUBLIC_V6, 443],
      ] as const) {
        expect([name, ip, port, verdict(name, outside(ip), port).admitted]).toEqual([name, ip, port, true]);
      }
      for (const ip of ['10.0.0.5', '172.16.5.4', '192.168.0.10', '169.254.169.254', '127.0.0.1', '100.64.1.1', 'fd00:ec2::254', 'fe80::1', '10.51.100.20']) {
        for (const port of [80, 443, 5432]) expect([name, ip, port, verdict(name, outside(ip), port).admitted]).toEqual([name, ip, port, false]);
      }
      // TCP only: no UDP to the internet (a resolver there would bypass the cluster's DNS).
      expect([name, verdict(name, outside('8.8.8.8'), 53, 'UDP').admitted, verdict(name, outside(PUBLIC_V4), 443, 'UDP').admitted]).toEqual([
        name,
        false,
        false,
      ]);
    }
    for (const name of workloadsOf(objects)
      .map((w) => w.metadata.name)
      .filter((n) => n !== 'webhook' && n !== 'upload')) {
      expect([name, verdict(name, outside(PUBLIC_V4), 443).admitted, verdict(name, outside(PUBLIC_V6), 443).admitted]).toEqual([name, false, false]);
    }
  });

  it(
    overlay === 'dev'
      ? 'reaches the in-cluster PostgreSQL from the database owners only (by its label)'
      : "reaches the managed database (the overlay's ipBlock) from the database owners only, on 5432",
    () => {
      const owners = services.filter((s) => declared.get(s as ServiceName)?.database);
      expect(owners.length).toBeGreaterThanOrEqual(4);
      const database: Endpoint = overlay === 'dev' ? pod('postgres') : outside(MANAGED_DATABASE);
      // The placeholder is a public (documentation) range, which the services reaching the internet may reach anyway;
      // a real managed database has a private address, which they never reach (the test above).
      const reaching = overlay === 'dev' ? owners : [...owners, ...services.filter((s) => declared.get(s as ServiceName)?.internet)];
      for (const name of workloadsOf(objects).map((w) => w.metadata.name)) {
        expect([name, verdict(name, database, 5432).admitted]).toEqual([name, reaching.includes(name)]);
      }
      for (const name of owners.filter((n) => !declared.get(n as ServiceName)?.internet)) {
        expect([name, verdict(name, database, 5433).admitted, verdict(name, outside('10.0.0.5'), 5432).admitted]).toEqual([name, false, false]);
      }
      if (overlay === 'prod') {
        const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'egress-to-database');
        expect(policy.spec.egress).toEqual([{ to: [{ ipBlock: { cidr: '198.51.100.0/24' } }], ports: [{ port: 5432 }] }]);
        expect(readFileSync(path.join(ROOT, 'k8s', 'overlays', 'prod', 'kustomization.yaml'), 'utf8')).toMatch(/cidr: 198\.51\.100\.0\/24 } # PLACEHOLDER/);
      }
    },
  );

  it("lets the services send to the OpenTelemetry collector in the namespace dam-cluster names (OTLP 4317, 4318), and follows an overlay's value", () => {
    const settings = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'dam-cluster').data;
    expect(settings.OTEL_COLLECTOR_NAMESPACE).toBe('observability');
    const collector = (ns: string) => foreignPod(ns, { 'app.kubernetes.io/name': 'otel-collector' });
    const reach = (objs: any[], from: string, ns: string, port: number) => {
      const source = workloadPod(objs, from);
      if (!source) throw new Error(`no workload ${from}`);
      return evaluateFlow(objs, { from: source, to: collector(ns), port }).admitted;
    };
    for (const name of services)
      expect([
        name,
        reach(objects, name, 'observability', 4318),
        reach(objects, name, 'observability', 4317),
        reach(objects, name, 'observability', 9999),
        reach(objects, name, 'tracing', 4318),
      ]).toEqual([name, true, true, false, false]);
    for (const name of ['nats', 'minio', 'minio-users']) expect([name, reach(objects, name, 'observability', 4318)]).toEqual([name, false]);
    // An overlay of its own on top of this one with another namespace merged into dam-cluster (replacements repeated).
    const { replacements } = parse(readFileSync(path.join(ROOT, 'k8s', 'overlays', overlay, 'kustomization.yaml'), 'utf8'));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-egress-overlay-'));
    try {
      writeFileSync(
        path.join(dir, 'kustomization.yaml'),
        stringify({
          resources: [path.relative(dir, path.join(ROOT, 'k8s', 'overlays', overlay as Overlay))],
          configMapGenerator: [
            { name: 'dam-cluster', behavior: 'merge', options: { disableNameSuffixHash: true }, literals: ['OTEL_COLLECTOR_NAMESPACE=tracing'] },
          ],
          replacements,
        }),
      );
      const rebuilt = parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' }))
        .map((d) => d.toJSON())
        .filter(Boolean);
      expect([reach(rebuilt, 'gateway', 'tracing', 4318), reach(rebuilt, 'gateway', 'observability', 4318)]).toEqual([true, false]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
