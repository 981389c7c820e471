/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The two tools that prove the NetworkPolicies against real traffic, on small cases of their own:
 * deploy/k8s/network-policy-eval.ts decides flows the way the NetworkPolicy API does, and deploy/local/record-flows.mjs
 * records every destination a process connects to (test/e2e/network-flows.e2e.test.ts puts them together).
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  admittedBetweenWorkloads,
  describeVerdict,
  evaluateFlow,
  foreignPod,
  inCidr,
  matchesSelector,
  serviceTargets,
  withoutCaller,
  workloadPod,
  type Endpoint,
  type Flow,
} from '../k8s/network-policy-eval';

const NS = 'dam';
const RECORDER = path.join(__dirname, '..', 'local', 'record-flows.mjs');

const deployment = (
  name: string,
  ports: Array<{ name?: string; containerPort: number }> = [{ name: 'http', containerPort: 8080 }],
  labels: Record<string, string> = {},
) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: NS },
  spec: {
    selector: { matchLabels: { 'app.kubernetes.io/name': name } },
    template: { metadata: { labels: { 'app.kubernetes.io/name': name, ...labels } }, spec: { containers: [{ name, image: 'x', ports }] } },
  },
});
const service = (name: string, port: number, targetPort: number | string) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: NS },
  spec: { selector: { 'app.kubernetes.io/name': name }, ports: [{ port, targetPort }] },
});
const policy = (name: string, spec: any, namespace = NS) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace },
  spec,
});
const app = (name: string) => ({ matchLabels: { 'app.kubernetes.io/name': name } });
const DEFAULT_DENY = policy('default-deny-ingress', { podSelector: {}, policyTypes: ['Ingress'] });

const pods = [
  deployment('gateway'),
  deployment('metadata'),
  deployment('minio', [
    { name: 'api', containerPort: 9000 },
    { name: 'console', containerPort: 9001 },
  ]),
  deployment('webhook'),
];
const pod = (objects: any[], name: string): Endpoint => {
  const p = workloadPod(objects, name);
  if (!p) throw new Error(`no workload ${name}`);
  return p;
};
const flow = (objects: any[], from: string | Endpoint, to: string | Endpoint, port: number): Flow => ({
  from: typeof from === 'string' ? pod(objects, from) : from,
  to: typeof to === 'string' ? pod(objects, to) : to,
  port,
});
const admitted = (objects: any[], from: string | Endpoint, to: string | Endpoint, port: number) =>
  evaluateFlow(objects, flow(objects, from, to, port)).admitted;

describe('the NetworkPolicy evaluator', () => {
  it('admits everything to a pod no policy selects, and nothing once a default deny selects it', () => {
    expect(admitted(pods, 'gateway', 'metadata', 8080)).toBe(true);
    expect(evaluateFlow(pods, flow(pods, 'gateway', 'metadata', 8080)).ingress).toEqual({ isolated: false });
    const denied = [...pods, DEFAULT_DENY];
    expect(admitted(denied, 'gateway', 'metadata', 8080)).toBe(false);
    expect(evaluateFlow(denied, flow(denied, 'gateway', 'metadata', 8080)).ingress).toEqual({ isolated: true, by: [], policies: ['default-deny-ingress'] });
    // A policy of another namespace does not isolate these pods.
    const elsewhere = [...pods, policy('default-deny-ingress', { podSelector: {}, policyTypes: ['Ingress'] }, 'other')];
    expect(admitted(elsewhere, 'gateway', 'metadata', 8080)).toBe(true);
  });

  it('admits the callers a podSelector lists, on the ports listed (by number or by the container port name), and blocks the rest', () => {
    const objects = [
      ...pods,
      DEFAULT_DENY,
      policy('metadata', {
        podSelector: app('metadata'),
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: app('gateway') }], ports: [{ port: 'http' }] }],
      }),
      policy('minio', {
        podSelector: app('minio'),
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: app('metadata') }], ports: [{ port: 9000 }] }],
      }),
    ];
    expect(admitted(objects, 'gateway', 'metadata', 8080)).toBe(true);
    expect(evaluateFlow(objects, flow(objects, 'gateway', 'metadata', 8080)).ingress).toEqual({
      isolated: true,
      by: ['metadata'],
      policies: ['default-deny-ingress', 'metadata'],
    });
    expect(admitted(objects, 'webhook', 'metadata', 8080)).toBe(false);
    // Port mismatch: the caller is listed, the port is not (by number, and by a name the pod gives another port).
    expect(admitted(objects, 'gateway', 'metadata', 9090)).toBe(false);
    expect(admitted(objects, 'metadata', 'minio', 9000)).toBe(true);
    expect(admitted(objects, 'metadata', 'minio', 9001)).toBe(false);
    // D1 as the manifests of 5232870 had it: the object store's policy lists the readers with `s3`, not the gateway.
    const d1 = evaluateFlow(objects, flow(objects, 'gateway', 'minio', 9000));
    expect(d1.admitted).toBe(false);
    expect(describeVerdict(flow(objects, 'gateway', 'minio', 9000), d1)).toBe(
      'gateway -> minio:9000: blocked (ingress BLOCKED (isolated by default-deny-ingress, minio); egress open)',
    );
  });

  it('reads ports as the API does: a missing port list admits every port, endPort a range, the protocol TCP unless named', () => {
    const objects = [
      ...pods,
      policy('any-port', { podSelector: app('metadata'), ingress: [{ from: [{ podSelector: app('gateway') }] }] }),
      policy('range', { podSelector: app('minio'), ingress: [{ ports: [{ port: 9000, endPort: 9001 }] }, { ports: [{ port: 9100, protocol: 'UDP' }] }] }),
    ];
    expect(admitted(objects, 'gateway', 'metadata', 1234)).toBe(true);
    expect(admitted(objects, 'webhook', 'metadata', 8080)).toBe(false);
    expect(admitted(objects, 'webhook', 'minio', 9001)).toBe(true);
    expect(admitted(objects, 'webhook', 'minio', 9002)).toBe(false);
    expect(admitted(objects, 'webhook', 'minio', 9100)).toBe(false);
    expect(evaluateFlow(objects, { ...flow(objects, 'webhook', 'minio', 9100), protocol: 'UDP' }).admitted).toBe(true);
  });

  it('admits by namespaceSelector, and reads a namespaceSelector with a podSelector in one peer as both, in two peers as either', () => {
    const ingressController = foreignPod('ingress-nginx', { 'app.kubernetes.io/name': 'ingress-nginx' });
    const prometheus = foreignPod('monitoring', { 'app.kubernetes.io/name': 'prometheus' });
    const lookalike = foreignPod('tenant', { 'app.kubernetes.io/name': 'gateway' });
    const objects = [
      ...pods,
      DEFAULT_DENY,
      policy('gateway', {
        podSelector: app('gateway'),
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }], ports: [{ port: 'http' }] }],
      }),
      policy('metadata', {
        podSelector: app('metadata'),
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: app('prometheus') }] }],
      }),
      policy('webhook', {
        podSelector: app('webhook'),
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }, { podSelector: app('gateway') }] }],
      }),
    ];
    expect(admitted(objects, ingressController, 'gateway', 8080)).toBe(true);
    expect(admitted(objects, prometheus, 'gateway', 8080)).toBe(false);
    // A pod of the same namespace is not admitted by a namespaceSelector naming another.
    expect(admitted(objects, 'metadata', 'gateway', 8080)).toBe(false);
    // One peer: Prometheus's pods in monitoring only.
    expect(admitted(objects, prometheus, 'metadata', 8080)).toBe(true);
    expect(admitted(objects, foreignPod('monitoring', { 'app.kubernetes.io/name': 'grafana' }), 'metadata', 8080)).toBe(false);
    // Two peers: anything in monitoring, or the gateway of the policy's own namespace (not a lookalike elsewhere).
    expect(admitted(objects, foreignPod('monitoring', { 'app.kubernetes.io/name': 'grafana' }), 'webhook', 8080)).toBe(true);
    expect(admitted(objects, 'gateway', 'webhook', 8080)).toBe(true);
    expect(admitted(objects, lookalike, 'webhook', 8080)).toBe(false);
    // A Namespace object's own labels count as well.
    const labelled = [...objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { 'kubernetes.io/metadata.name': NS, team: 'dam' } } }];
    labelled.push(policy('team', { podSelector: app('gateway'), ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'dam' } } }] }] }));
    expect(admitted(labelled, 'metadata', 'gateway', 8080)).toBe(true);
  });

  it('holds the source to its egress policies too: ipBlock with exceptions, and pods', () => {
    const outside = (ip: string): Endpoint => ({ kind: 'external', name: ip, ip });
    const objects = [
      ...pods,
      policy('webhook-egress', {
        podSelector: app('webhook'),
        policyTypes: ['Egress'],
        egress: [
          { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '192.168.0.0/16'] } }], ports: [{ port: 443 }] },
          { to: [{ podSelector: app('metadata') }] },
        ],
      }),
    ];
    expect(admitted(objects, 'webhook', outside('203.0.113.7'), 443)).toBe(true);
    expect(admitted(objects, 'webhook', outside('203.0.113.7'), 80)).toBe(false);
    expect(admitted(objects, 'webhook', outside('10.1.2.3'), 443)).toBe(false);
    expect(admitted(objects, 'webhook', 'metadata', 8080)).toBe(true);
    expect(admitted(objects, 'webhook', 'gateway', 8080)).toBe(false);
    expect(evaluateFlow(objects, flow(objects, 'webhook', 'gateway', 8080))).toMatchObject({
      ingress: { isolated: false },
      egress: { isolated: true, by: [] },
    });
    // Other pods have no egress policy.
    expect(admitted(objects, 'gateway', outside('10.1.2.3'), 443)).toBe(true);
    expect([
      inCidr('10.255.0.1', '10.0.0.0/8'),
      inCidr('11.0.0.1', '10.0.0.0/8'),
      inCidr('1.2.3.4', '1.2.3.4/32'),
      inCidr('1.2.3.5', '1.2.3.4'),
      inCidr('::1', '0.0.0.0/0'),
    ]).toEqual([true, false, true, false, false]);
    // IPv6: prefixes, `::` anywhere, an IPv4 tail; never across families.
    expect([
      inCidr('fd00:ec2::254', 'fc00::/7'),
      inCidr('fe80::1', 'fc00::/7'),
      inCidr('2606:4700:4700::1111', '::/0'),
      inCidr('::ffff:10.0.0.5', '::ffff:0:0/96'),
      inCidr('::ffff:10.0.0.5', '::ffff:b00:0/104'),
      inCidr('2001:db8::1', '2001:db8::1'),
      inCidr('2001:db8::2', '2001:db8::1/128'),
      inCidr('10.0.0.1', '::/0'),
      inCidr('1::2::3', '::/0'),
    ]).toEqual([true, false, true, true, false, true, false, false, false]);
  });

  it('matches label selectors with expressions, and finds what a Service port reaches', () => {
    const labels = { a: '1', b: '2' };
    expect(matchesSelector({}, labels)).toBe(true);
    expect(
      matchesSelector(
        {
          matchExpressions: [
            { key: 'a', operator: 'In', values: ['1', '3'] },
            { key: 'c', operator: 'DoesNotExist' },
          ],
        },
        labels,
      ),
    ).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'b', operator: 'NotIn', values: ['2'] }] }, labels)).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'c', operator: 'Exists' }] }, labels)).toBe(false);
    const objects = [...pods, service('gateway', 80, 'http'), service('minio', 9000, 9000)];
    expect(serviceTargets(objects, 'gateway', 80).map((t) => [t.pod.name, t.port])).toEqual([['gateway', 8080]]);
    expect(serviceTargets(objects, 'minio', 9000).map((t) => [t.pod.name, t.port])).toEqual([['minio', 9000]]);
    expect(serviceTargets(objects, 'postgres', 5432)).toEqual([]);
    expect(() => serviceTargets(objects, 'gateway', 8080)).toThrow(/no port 8080/);
  });

  it('lists the pairs of workloads the policies connect through a Service, to compare with what traffic uses', () => {
    const objects = [
      ...pods,
      service('gateway', 80, 'http'),
      service('metadata', 80, 'http'),
      service('minio', 9000, 'api'),
      service('webhook', 80, 'http'),
      DEFAULT_DENY,
      policy('metadata', {
        podSelector: app('metadata'),
        ingress: [{ from: [{ podSelector: app('gateway') }, { podSelector: app('webhook') }], ports: [{ port: 'http' }] }],
      }),
      policy('minio', {
        podSelector: app('minio'),
        ingress: [{ from: [{ podSelector: app('metadata') }, { podSelector: app('minio') }], ports: [{ port: 9001 }] }],
      }),
      policy('webhook', { podSelector: app('webhook'), ingress: [{ from: [{ podSelector: app('gateway') }] }] }),
    ];
    // minio's rule names the console port, not the one its Service reaches; a workload reaching its own pods does not count.
    expect(admittedBetweenWorkloads(objects)).toEqual(['gateway -> metadata', 'gateway -> webhook', 'webhook -> metadata']);
  });

  it('takes one caller out of the peers admitted to a pod, and nothing else (how the e2e test shows D1 would fail it)', () => {
    const objects = [
      ...pods,
      DEFAULT_DENY,
      policy('minio', {
        podSelector: app('minio'),
        ingress: [
          { from: [{ podSelector: app('metadata') }, { podSelector: app('gateway') }], ports: [{ port: 9000 }] },
          { from: [{ podSelector: app('gateway') }], ports: [{ port: 9001 }] },
        ],
      }),
      policy('metadata', { podSelector: app('metadata'), ingress: [{ from: [{ podSelector: app('gateway') }] }] }),
    ];
    const cut = withoutCaller(objects, pod(objects, 'gateway'), pod(objects, 'minio'));
    expect([admitted(objects, 'gateway', 'minio', 9000), admitted(cut, 'gateway', 'minio', 9000), admitted(cut, 'gateway', 'minio', 9001)]).toEqual([
      true,
      false,
      false,
    ]);
    expect([admitted(cut, 'metadata', 'minio', 9000), admitted(cut, 'gateway', 'metadata', 8080)]).toEqual([true, true]);
    // The rule left without peers is gone, not turned into one open to every peer.
    expect(cut.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'minio').spec.ingress).toHaveLength(1);
  });
});

describe('the flow recorder (deploy/local/record-flows.mjs)', () => {
  it('appends each distinct destination a process connects to once, failed attempts included, to <dir>/<service>.jsonl', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-flows-'));
    const server = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const open = (server.address() as net.AddressInfo).port;
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    // The child connects by net.connect, by a bare Socket (as pg does) and by fetch (undici), twice each to the open
    // port, then once to a closed one.
    const script = `
      const net = require('node:net');
      const once = (s) => new Promise((r) => { s.on('error', r); s.on('close', r); });
      (async () => {
        for (let i = 0; i < 2; i++) {
          await once(net.connect(${open}, '127.0.0.1'));
          const bare = new net.Socket(); bare.connect(${open}, '127.0.0.1'); await once(bare);
          await fetch('http://127.0.0.1:${open}/').catch(() => {});
        }
        await once(net.connect(${closed}, '127.0.0.1'));
      })();`;
    try {
      // Not spawnSync: this process's server must go on answering while the child connects.
      await promisify(execFile)(process.execPath, ['--import', RECORDER, '-e', script], {
        env: { ...process.env, DAM_RECORD_FLOWS: dir, DAM_FLOW_SERVICE: 'probe' },
        timeout: 20_000,
      });
      expect(readdirSync(dir)).toEqual(['probe.jsonl']);
      const lines = readFileSync(path.join(dir, 'probe.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => [l.service, l.address, l.port])).toEqual([
        ['probe', '127.0.0.1', open],
        ['probe', '127.0.0.1', closed],
      ]);
      // Without DAM_RECORD_FLOWS the recorder does nothing.
      await promisify(execFile)(process.execPath, ['--import', RECORDER, '-e', script], {
        env: { ...process.env, DAM_RECORD_FLOWS: '', DAM_FLOW_SERVICE: 'quiet' },
        timeout: 20_000,
      });
      expect(readdirSync(dir)).toEqual(['probe.jsonl']);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the service from the entry path or run-service when DAM_FLOW_SERVICE is not set', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-flows-'));
    try {
      const entry = path.join(dir, 'services', 'metadata', 'src', 'main.js');
      mkdirSync(path.dirname(entry), { recursive: true });
      writeFileSync(entry, "require('node:net').connect(1, '127.0.0.1').on('error', () => {});");
      const run = spawnSync(process.execPath, ['--import', RECORDER, entry], {
        env: { ...process.env, DAM_RECORD_FLOWS: path.join(dir, 'flows'), DAM_FLOW_SERVICE: '' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status).toBe(0);
      expect(readdirSync(path.join(dir, 'flows'))).toEqual(['metadata.jsonl']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
