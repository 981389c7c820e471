/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The connections the suite's services open, as the cluster would see them: each service process records its
 * destinations (deploy/local/record-flows.mjs, preloaded through NODE_OPTIONS), the suite's addresses name the
 * workload behind each, and each workload is reached in the cluster through its Service
 * (deploy/k8s/network-policy-eval.ts then decides them against a rendered overlay).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { s3Env, testPgUrl } from '@dam/testing';
import { evaluateFlow, serviceTargets, workloadPod, type Endpoint, type Flow, type Verdict } from '../../deploy/k8s/network-policy-eval';
import type { Overrides, Suite, SuiteServiceName } from './suite';

const ROOT = path.resolve(__dirname, '..', '..');
export const RECORDER = path.join(ROOT, 'deploy', 'local', 'record-flows.mjs');

/** The env that makes each service record its connections into `dir`, over `base` (overrides of the file's own). */
export function recordingOverrides(dir: string, services: readonly SuiteServiceName[], base: Overrides = {}): Overrides {
  const preload = `--import=${pathToFileURL(RECORDER).href}`;
  return Object.fromEntries(
    services.map((name) => [
      name,
      { ...base[name], NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' '), DAM_RECORD_FLOWS: dir, DAM_FLOW_SERVICE: name },
    ]),
  );
}

/** What listens on each local port of a running suite: its services, NATS, PostgreSQL and the object store (radosgw stands in for MinIO). */
export function suiteWorkloads(suite: Suite): Map<number, string> {
  const byPort = new Map<number, string>();
  const portOf = (url: string) => Number(new URL(url).port);
  for (const [name, p] of Object.entries(suite.services)) byPort.set(p.port, name);
  for (const url of suite.natsUrl.split(',')) byPort.set(portOf(url), 'nats');
  byPort.set(portOf(suite.postgres?.url ?? testPgUrl()), 'postgresql');
  byPort.set(portOf(s3Env(suite.bucket).S3_ENDPOINT), 'minio');
  if (suite.proxies.postgres) byPort.set(suite.proxies.postgres.port, 'postgresql');
  if (suite.proxies.s3) byPort.set(suite.proxies.s3.port, 'minio');
  return byPort;
}

/** One destination a service connected to: the workload there, or `external` (`address:port` then says where). */
export interface ObservedFlow {
  from: string;
  to: string;
  address: string;
  port: number;
}

/** The distinct connections recorded in `dir`, each named by `workloads` (every process of a service together). */
export function observedFlows(dir: string, workloads: Map<number, string>): ObservedFlow[] {
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

export interface ClusterVerdict {
  observed: ObservedFlow;
  flow: Flow;
  verdict: Verdict;
}

/** Each observed flow as the pods of `objects` would make it, with what their NetworkPolicies decide (one per pod reached). */
export function decideObserved(objects: any[], observed: ObservedFlow[]): ClusterVerdict[] {
  return observed.flatMap((o) => {
    const from = workloadPod(objects, o.from);
    if (!from) throw new Error(`the overlay has no workload ${o.from}`);
    const target = CLUSTER_ADDRESS[o.to] ?? (o.to === 'external' ? undefined : { service: o.to, port: 80 });
    const reached = target ? serviceTargets(objects, target.service, target.port) : [];
    // Only the database may live outside an overlay; a service of the suite without its Service is a broken overlay.
    if (target && reached.length === 0 && o.to !== 'postgresql') throw new Error(`the overlay has no pod behind Service ${target.service}:${target.port}`);
    const outside: Endpoint = { kind: 'external', name: o.to === 'external' ? `external ${o.address}:${o.port}` : `${o.to} (outside)`, ip: o.to === 'external' ? OUTSIDE.internet : OUTSIDE.database };
    const targets = reached.length > 0 ? reached : [{ pod: outside, port: o.to === 'external' ? o.port : (target?.port ?? o.port) }];
    return targets.map(({ pod, port }) => {
      const flow: Flow = { from, to: pod, port };
      return { observed: o, flow, verdict: evaluateFlow(objects, flow) };
    });
  });
}
