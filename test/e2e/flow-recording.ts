/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The connections the suite's services open, as the cluster would see them: each service process records its
 * destinations (deploy/local/record-flows.mjs, preloaded through NODE_OPTIONS), the suite's addresses name the
 * workload behind each, and each workload is reached in the cluster through its Service
 * (deploy/k8s/network-policy-eval.ts then decides them against a rendered overlay). startSuite records when given
 * `recordFlows` or DAM_RECORD_FLOWS; test/e2e/network-flows.e2e.test.ts and test/e2e/check-flows.ts read it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { evaluateFlow, foreignPod, serviceTargets, workloadPod, type Endpoint, type Flow, type Verdict } from '../../deploy/k8s/network-policy-eval';

const ROOT = path.resolve(__dirname, '..', '..');
export const RECORDER = path.join(ROOT, 'deploy', 'local', 'record-flows.mjs');

/** Where a suite's workloads listen, as startSuite knows them (services not started included: calls to them are attempts). */
export interface SuiteAddresses {
  services: Record<string, number>;
  /** NATS_URL: one server or every node, comma-separated. */
  nats: string;
  postgres: string;
  s3: string;
  proxies: { postgres?: { port: number }; s3?: { port: number } };
}

export interface SuiteRecording {
  /** This suite's own directory: <service>.jsonl from each process, workloads.json once named. */
  dir: string;
  /** The env that makes service `name` record into `dir`. */
  env(name: string): Record<string, string>;
  /** Writes what listens on each port (workloads.json), which observedFlows reads. */
  name(addresses: SuiteAddresses): void;
}

let suites = 0;

/**
 * Recording for one suite (startSuite's `recordFlows`, or DAM_RECORD_FLOWS for every suite of a run): a directory of
 * its own under `root`, since the ports of two suites of one run are not the same workloads. Undefined without a root.
 */
export function suiteRecording(root: string | undefined): SuiteRecording | undefined {
  if (!root) return undefined;
  const dir = path.join(root, `suite-${process.pid}-${++suites}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const preload = `--import=${pathToFileURL(RECORDER).href}`;
  return {
    dir,
    env: (name) => ({ NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' '), DAM_RECORD_FLOWS: dir, DAM_FLOW_SERVICE: name }),
    name(addresses) {
      const byPort: Record<number, string> = {};
      const portOf = (url: string) => Number(new URL(url).port);
      for (const [name, port] of Object.entries(addresses.services)) byPort[port] = name;
      for (const url of addresses.nats.split(',')) byPort[portOf(url)] = 'nats';
      byPort[portOf(addresses.postgres)] = 'postgresql';
      byPort[portOf(addresses.s3)] = 'minio';
      if (addresses.proxies.postgres) byPort[addresses.proxies.postgres.port] = 'postgresql';
      if (addresses.proxies.s3) byPort[addresses.proxies.s3.port] = 'minio';
      writeFileSync(path.join(dir, WORKLOADS_FILE), `${JSON.stringify(byPort, null, 1)}\n`);
    },
  };
}

const WORKLOADS_FILE = 'workloads.json';

/** The directories of the suites recorded under `root` (those that got as far as naming their workloads). */
export function recordedSuites(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(root, d.name, WORKLOADS_FILE)))
    .map((d) => path.join(root, d.name));
}

/** One destination a service connected to: the workload there, or `external` (`address:port` then says where). */
export interface ObservedFlow {
  from: string;
  to: string;
  address: string;
  port: number;
}

function readWorkloads(dir: string): Map<number, string> {
  const byPort = JSON.parse(readFileSync(path.join(dir, WORKLOADS_FILE), 'utf8')) as Record<string, string>;
  return new Map(Object.entries(byPort).map(([port, name]) => [Number(port), name]));
}

/** The distinct connections recorded in a suite's `dir`, each named by its workloads.json (every process of a service together). */
export function observedFlows(dir: string): ObservedFlow[] {
  const workloads = readWorkloads(dir);
  const flows = new Map<string, ObservedFlow>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl'))) {
    for (const line of readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const r = JSON.parse(line) as { service: string; address?: string; port?: number; path?: string };
      // A Unix socket stays inside the pod (tsx's IPC pipe in the tests): no NetworkPolicy is asked.
      if (r.path !== undefined || r.address === undefined || r.port === undefined) continue;
      const { address, port } = r;
      const loopback = /^(127\.|::1$|::ffff:127\.)/.test(address);
      const to = (loopback && workloads.get(port)) || 'external';
      const flow = { from: r.service, to, address, port };
      flows.set(JSON.stringify(flow), flow);
    }
  }
  return [...flows.values()].sort((a, b) => `${a.from} ${a.to}`.localeCompare(`${b.from} ${b.to}`));
}

/**
 * How each workload is reached in the cluster: the Service its clients name (`*_URL`, DATABASE_URL, NATS_URL,
 * S3_ENDPOINT in the ConfigMap and Secrets) and its port there. Where an overlay has no such Service (prod's
 * PostgreSQL is managed, outside), the destination is an address outside the cluster.
 */
const CLUSTER_ADDRESS: Record<string, { service: string; port: number }> = {
  postgresql: { service: 'postgres', port: 5432 },
  nats: { service: 'nats', port: 4222 },
  minio: { service: 'minio', port: 9000 },
};
/** Documentation addresses (RFC 5737) for what lies outside the cluster: a managed database, a webhook receiver on the internet. */
const OUTSIDE = { database: '198.51.100.20', internet: '203.0.113.10' };

/** The source of the requests a client sends to the public addresses: the ingress controller (or Gateway) in a cluster. */
export const INGRESS = 'ingress-controller';
/** The nginx cache tier in front of link-signing's edge in a cluster (issue 33). */
export const CDN_TIER = 'cdn-cache';
/** What clients reach through the ingress: the three public addresses and the object store's host (presigned links). */
const PUBLIC_WORKLOADS = new Set(['gateway', 'upload', 'link-signing', 'minio']);

/**
 * The connections and fetch requests this (test) process makes from now until `stop`, taken as the ingress controller's: those to the
 * suite's public workloads, named by its workloads.json (the test's own set-up traffic to PostgreSQL, NATS and the
 * object store's admin side is left out by the same rule: only a public workload counts, and only while recording).
 */
export function recordClients(): { stop(dir: string): ObservedFlow[] } {
  const seen = new Map<string, { address: string; port: number }>();
  const onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    socket.on('connectionAttempt', (address: string, port?: number) => {
      if (port !== undefined) seen.set(`${address}|${port}`, { address, port });
    });
  };
  // fetch reuses the connections the readiness checks left open: each request counts, whatever its connection.
  const onRequest = (message: unknown): void => {
    const origin = new URL((message as { request: { origin: string } }).request.origin);
    if (origin.port) seen.set(`${origin.hostname}|${origin.port}`, { address: origin.hostname, port: Number(origin.port) });
  };
  subscribe('net.client.socket', onSocket);
  subscribe('undici:request:create', onRequest);
  return {
    stop(dir) {
      unsubscribe('net.client.socket', onSocket);
      unsubscribe('undici:request:create', onRequest);
      const workloads = readWorkloads(dir);
      return [...seen.values()].flatMap(({ address, port }) => {
        const to = workloads.get(port);
        return to && PUBLIC_WORKLOADS.has(to) ? [{ from: INGRESS, to, address, port }] : [];
      });
    },
  };
}

/** The namespace of the ingress controller an overlay admits (its dam-cluster ConfigMap; ingress-nginx before there was one). */
function ingressNamespace(objects: any[]): string {
  return objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name?.startsWith('dam-cluster'))?.data?.INGRESS_NAMESPACE ?? 'ingress-nginx';
}

export interface ClusterVerdict {
  observed: ObservedFlow;
  flow: Flow;
  verdict: Verdict;
}

/** Each observed flow as the pods of `objects` would make it, with what their NetworkPolicies decide (one per pod reached). */
export function decideObserved(objects: any[], observed: ObservedFlow[]): ClusterVerdict[] {
  // {cdn} in a cluster: the ingress controller reaches the cache tier, and the tier link-signing (deploy/k8s/cdn-cache.ts).
  const tier = workloadPod(objects, CDN_TIER) ? CDN_TIER : undefined;
  const hops = observed.flatMap((o): ObservedFlow[] =>
    tier && o.from === INGRESS && o.to === 'link-signing'
      ? [
          { ...o, to: tier },
          { ...o, from: tier },
        ]
      : [o],
  );
  return hops.flatMap((o) => {
    const from = o.from === INGRESS ? foreignPod(ingressNamespace(objects)) : workloadPod(objects, o.from);
    if (!from) throw new Error(`the overlay has no workload ${o.from}`);
    const target = CLUSTER_ADDRESS[o.to] ?? (o.to === 'external' ? undefined : { service: o.to, port: 80 });
    const reached = target ? serviceTargets(objects, target.service, target.port) : [];
    // Only the database may live outside an overlay; a service of the suite without its Service is a broken overlay.
    if (target && reached.length === 0 && o.to !== 'postgresql') throw new Error(`the overlay has no pod behind Service ${target.service}:${target.port}`);
    const outside: Endpoint = {
      kind: 'external',
      name: o.to === 'external' ? `external ${o.address}:${o.port}` : `${o.to} (outside)`,
      ip: o.to === 'external' ? OUTSIDE.internet : OUTSIDE.database,
    };
    const targets = reached.length > 0 ? reached : [{ pod: outside, port: o.to === 'external' ? o.port : (target?.port ?? o.port) }];
    return targets.map(({ pod, port }) => {
      const flow: Flow = { from, to: pod, port };
      return { observed: o, flow, verdict: evaluateFlow(objects, flow) };
    });
  });
}
