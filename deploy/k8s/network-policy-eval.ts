/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * What the NetworkPolicies of a rendered overlay (`kubectl kustomize k8s/overlays/<name>`) let through, decided the
 * way the NetworkPolicy API defines it (networking.k8s.io/v1), without a cluster:
 * - a pod is isolated for ingress (egress) when a policy of its namespace selects it and has that policy type;
 * - an isolated pod admits a connection when at least one rule of one of those policies admits it (rules only add);
 * - a rule admits a peer it lists (podSelector in the policy's namespace, namespaceSelector, both together, or an
 *   ipBlock) on a port it lists (number or the destination container's port name, a range with endPort); a rule
 *   without `from`/`to` admits every peer, one without `ports` every port;
 * - a connection happens when the destination's ingress and the source's egress both admit it.
 * A connection to a Service is decided at the pod it reaches (its selector, its targetPort resolved on the pod).
 * Pure functions over the parsed objects (and buildOverlay, which makes them with kubectl):
 * deploy/test/network-flows.unit.test.ts holds them to small hand-made policies, test/e2e/network-flows.e2e.test.ts
 * applies them to the connections the services really open.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}

/** One end of a connection: a pod (its namespace, its labels, its namespace's labels, its ports) or an address outside the cluster. */
export type Endpoint =
  | { kind: 'pod'; name: string; namespace: string; labels: Record<string, string>; namespaceLabels: Record<string, string>; ports: ContainerPort[] }
  | { kind: 'external'; name: string; ip: string };

export interface Flow {
  from: Endpoint;
  to: Endpoint;
  /** The port the connection reaches at the destination (the pod's container port, after a Service's translation). */
  port: number;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

/** One direction's decision: not isolated (everything passes), or isolated and the policies that admit the flow (none: blocked). */
export type Decision = { isolated: false } | { isolated: true; by: string[]; policies: string[] };

export interface Verdict {
  admitted: boolean;
  ingress: Decision;
  egress: Decision;
}

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'ReplicaSet']);
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export function matchesSelector(selector: LabelSelector | undefined | null, labels: Record<string, string>): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    switch (e.operator) {
      case 'In':
        if (!has || !(e.values ?? []).includes(value as string)) return false;
        break;
      case 'NotIn':
        if (has && (e.values ?? []).includes(value as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        throw new Error(`unknown label selector operator ${String((e as { operator: unknown }).operator)}`);
    }
  }
  return true;
}

const ipv4 = (ip: string): number | undefined => {
  const parts = ip.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
};

/** An IPv6 address as a number (`::` compression and an IPv4 tail as in `::ffff:10.0.0.5` read), or undefined. */
const ipv6 = (ip: string): bigint | undefined => {
  let text = ip.toLowerCase();
  if (!text.includes(':')) return undefined;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (tail !== undefined) {
    const v4 = ipv4(tail);
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, -tail.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groupsOf(halves[0] as string);
  const rest = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  if (groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return groups.reduce((n, g) => n * 65536n + BigInt(parseInt(g, 16)), 0n);
};

/** Whether an address lies in a CIDR, IPv4 or IPv6 (an IPv6 CIDR never holds an IPv4 address, and the other way round). */
export function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const a = ipv4(ip);
  const b = ipv4(base ?? '');
  if (a !== undefined && b !== undefined) {
    const n = bits === undefined ? 32 : Number(bits);
    if (!Number.isInteger(n) || n < 0 || n > 32) return false;
    const block = 2 ** (32 - n);
    return Math.floor(a / block) === Math.floor(b / block);
  }
  const a6 = ipv6(ip);
  const b6 = ipv6(base ?? '');
  if (a6 === undefined || b6 === undefined) return false;
  const n = bits === undefined ? 128 : Number(bits);
  if (!Number.isInteger(n) || n < 0 || n > 128) return false;
  const shift = BigInt(128 - n);
  return a6 >> shift === b6 >> shift;
}

const namespaceOf = (o: any): string => o.metadata?.namespace ?? 'default';

/** The labels of each namespace: what Namespace objects say, and the name label Kubernetes sets on every namespace. */
function namespaceLabels(objects: any[], namespace: string): Record<string, string> {
  const ns = objects.find((o) => o.kind === 'Namespace' && o.metadata?.name === namespace);
  return { ...(ns?.metadata?.labels ?? {}), [NAMESPACE_NAME_LABEL]: namespace };
}

function podOfWorkload(objects: any[], o: any): Endpoint {
  const template = o.spec.template;
  const ns = namespaceOf(o);
  return {
    kind: 'pod',
    name: o.metadata.name,
    namespace: ns,
    labels: template.metadata?.labels ?? {},
    namespaceLabels: namespaceLabels(objects, ns),
    ports: [...(template.spec.initContainers ?? []), ...template.spec.containers].flatMap((c: any) => c.ports ?? []),
  };
}

/** The pod of a Deployment, StatefulSet, DaemonSet or Job of the rendered objects, by the workload's name. */
export function workloadPod(objects: any[], name: string): Endpoint | undefined {
  const o = objects.find((x) => WORKLOAD_KINDS.has(x.kind) && x.metadata?.name === name);
  return o ? podOfWorkload(objects, o) : undefined;
}

/** A pod outside the rendered objects (an ingress controller, Prometheus, KEDA): its namespace and labels. */
export function foreignPod(namespace: string, labels: Record<string, string> = {}, namespaceLabelsExtra: Record<string, string> = {}): Endpoint {
  return { kind: 'pod', name: `${namespace}/${Object.values(labels).join(',') || '*'}`, namespace, labels, namespaceLabels: { ...namespaceLabelsExtra, [NAMESPACE_NAME_LABEL]: namespace }, ports: [] };
}

/**
 * What a connection to `service:port` reaches: each pod its selector picks and the container port its targetPort
 * names there. Empty when the overlay has no such Service or no pod behind it (the destination is outside).
 */
export function serviceTargets(objects: any[], service: string, port: number): Array<{ pod: Endpoint; port: number }> {
  const svc = objects.find((o) => o.kind === 'Service' && o.metadata?.name === service);
  if (!svc?.spec?.selector) return [];
  const entry = (svc.spec.ports ?? []).find((p: any) => p.port === port);
  if (!entry) throw new Error(`Service ${service} has no port ${port}`);
  const pods = objects.filter((o) => WORKLOAD_KINDS.has(o.kind) && namespaceOf(o) === namespaceOf(svc) && matchesSelector({ matchLabels: svc.spec.selector }, o.spec.template.metadata?.labels ?? {}));
  return pods.flatMap((o) => {
    const pod = podOfWorkload(objects, o);
    const target = entry.targetPort ?? entry.port;
    const resolved = typeof target === 'number' ? target : pod.kind === 'pod' ? pod.ports.find((p) => p.name === target)?.containerPort : undefined;
    return resolved === undefined ? [] : [{ pod, port: resolved }];
  });
}

function peerMatches(peer: any, policyNamespace: string, other: Endpoint): boolean {
  if (peer.ipBlock) {
    if (other.kind !== 'external') return false;
    return inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c: string) => inCidr(other.ip, c));
  }
  if (other.kind !== 'pod') return false;
  const namespaceOk = peer.namespaceSelector ? matchesSelector(peer.namespaceSelector, other.namespaceLabels) : other.namespace === policyNamespace;
  const podOk = peer.podSelector ? matchesSelector(peer.podSelector, other.labels) : true;
  return namespaceOk && podOk;
}

function portMatches(entry: any, port: number, protocol: string, destination: Endpoint): boolean {
  if ((entry.protocol ?? 'TCP') !== protocol) return false;
  if (entry.port === undefined) return true;
  if (typeof entry.port === 'string') {
    if (destination.kind !== 'pod') return false;
    return destination.ports.some((p) => p.name === entry.port && p.containerPort === port && (p.protocol ?? 'TCP') === protocol);
  }
  return entry.endPort === undefined ? entry.port === port : port >= entry.port && port <= entry.endPort;
}

const policyTypes = (p: any): string[] => p.spec.policyTypes ?? ['Ingress', ...(p.spec.egress ? ['Egress'] : [])];

function decide(policies: any[], direction: 'Ingress' | 'Egress', subject: Endpoint, peer: Endpoint, port: number, protocol: string, destination: Endpoint): Decision {
  if (subject.kind !== 'pod') return { isolated: false };
  const selecting = policies.filter((p) => namespaceOf(p) === subject.namespace && matchesSelector(p.spec.podSelector, subject.labels) && policyTypes(p).includes(direction));
  if (selecting.length === 0) return { isolated: false };
  const by = selecting.filter((p) => {
    const rules: any[] = (direction === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? [];
    return rules.some((r) => {
      const peers: any[] | undefined = direction === 'Ingress' ? r.from : r.to;
      const ports: any[] | undefined = r.ports;
      const peerOk = !peers || peers.length === 0 || peers.some((x) => peerMatches(x, namespaceOf(p), peer));
      const portOk = !ports || ports.length === 0 || ports.some((x) => portMatches(x, port, protocol, destination));
      return peerOk && portOk;
    });
  });
  return { isolated: true, by: by.map((p) => p.metadata.name), policies: selecting.map((p) => p.metadata.name) };
}

/** Whether the NetworkPolicies among `objects` let `flow` through: the destination's ingress and the source's egress. */
export function evaluateFlow(objects: any[], flow: Flow): Verdict {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const protocol = flow.protocol ?? 'TCP';
  const ingress = decide(policies, 'Ingress', flow.to, flow.from, flow.port, protocol, flow.to);
  const egress = decide(policies, 'Egress', flow.from, flow.to, flow.port, protocol, flow.to);
  const passes = (d: Decision) => !d.isolated || d.by.length > 0;
  return { admitted: passes(ingress) && passes(egress), ingress, egress };
}

/**
 * The objects with `caller` taken out of every ingress peer that admits it to `to`: the overlay as it would be had it
 * forgotten that caller (a rule left without peers goes; a rule open to every peer stays). Tests use it to show that
 * a flow they observed is one the policies must admit (D1: gateway -> minio).
 */
export function withoutCaller(objects: any[], caller: Endpoint, to: Endpoint): any[] {
  return objects.map((o) => {
    if (o.kind !== 'NetworkPolicy' || to.kind !== 'pod' || namespaceOf(o) !== to.namespace || !matchesSelector(o.spec.podSelector, to.labels)) return o;
    const ingress = (o.spec.ingress ?? []).flatMap((r: any) => {
      if (!r.from || r.from.length === 0) return [r];
      const from = r.from.filter((peer: any) => !peerMatches(peer, namespaceOf(o), caller));
      return from.length > 0 ? [{ ...r, from }] : [];
    });
    return { ...o, spec: { ...o.spec, ingress } };
  });
}

/**
 * Every `source -> destination` pair of long-running workloads (Deployments, StatefulSets, DaemonSets) of `objects`
 * whose policies let the source reach the destination through one of the destination's Services: what the overlay
 * allows between its own pods, to compare with what traffic needs. A workload reaching its own pods is left out.
 */
export function admittedBetweenWorkloads(objects: any[]): string[] {
  const workloads = objects.filter((o) => WORKLOAD_KINDS.has(o.kind) && o.kind !== 'Job' && o.kind !== 'ReplicaSet');
  const services = objects.filter((o) => o.kind === 'Service' && o.spec?.selector);
  const pairs = new Set<string>();
  for (const source of workloads) {
    const from = podOfWorkload(objects, source);
    for (const svc of services) {
      for (const entry of svc.spec.ports ?? []) {
        for (const { pod, port } of serviceTargets(objects, svc.metadata.name, entry.port)) {
          if (pod.name === source.metadata.name) continue;
          if (evaluateFlow(objects, { from, to: pod, port, protocol: entry.protocol ?? 'TCP' }).admitted) pairs.add(`${source.metadata.name} -> ${pod.name}`);
        }
      }
    }
  }
  return [...pairs].sort();
}

/** One line for a report: which side blocked, and the policies that isolate it. */
export function describeVerdict(flow: Flow, verdict: Verdict): string {
  const side = (d: Decision, what: string) => (!d.isolated ? `${what} open` : d.by.length > 0 ? `${what} by ${d.by.join(', ')}` : `${what} BLOCKED (isolated by ${d.policies.join(', ')})`);
  return `${flow.from.name} -> ${flow.to.name}:${flow.port}: ${verdict.admitted ? 'admitted' : 'blocked'} (${side(verdict.ingress, 'ingress')}; ${side(verdict.egress, 'egress')})`;
}

/** The objects `kubectl kustomize <k8sDir>/overlays/<overlay>` builds, parsed. */
export function buildOverlay(k8sDir: string, overlay: string): any[] {
  const dir = path.join(k8sDir, 'overlays', overlay);
  if (!existsSync(dir)) throw new Error(`no overlay ${dir}`);
  return parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 }))
    .map((d) => d.toJSON())
    .filter(Boolean);
}
