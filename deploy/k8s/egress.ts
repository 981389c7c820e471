/**
 * Egress NetworkPolicies (issue 31, the review's "No egress NetworkPolicies"): every pod of the namespace may open
 * only the connections it needs. deploy/k8s/generate.ts writes them into k8s/base/network-policy-egress.yaml.
 *
 * - `default-deny-egress` isolates every pod of the namespace for egress; `egress-dns` gives each one the cluster's
 *   DNS (kube-dns / CoreDNS in kube-system, UDP and TCP 53).
 * - `<workload>-egress` for each service, NATS, MinIO and the minio-users Job: exactly what services.ts declares.
 *   A service reaches NATS (4222) with `nats`, the object store (9000) with `s3` or `fetchesPresigned`, and each
 *   service that lists it among its `callers` (8080, the pods' port behind every Service's 80). NATS reaches its
 *   peers (6222 routes, 4222), MinIO its peers (9000), the Job MinIO (9000).
 * - `egress-to-database`: the services with a `database` (their migrate init containers are in the same pods) to
 *   PostgreSQL on 5432. The base's peer is the `postgres` pod of the namespace (the dev overlay's); the prod overlay
 *   replaces it by the ipBlock of its managed database (an overlay setting: k8s/overlays/prod/kustomization.yaml).
 * - `egress-to-internet`: the services with `internet` (webhook deliveries, upload's ingest) to every public
 *   address, on any TCP port (their outbound guard, libs/http/src/outbound-address.ts, admits any port of a public
 *   host): 0.0.0.0/0 and ::/0 except the private, loopback, link-local, CGNAT, multicast and reserved ranges, so the
 *   policy backs up the guard's SSRF check (the cluster's pods, Services and nodes, the cloud's metadata address).
 * - `egress-to-otel-collector`: every service to the OpenTelemetry collector (OTLP 4317 gRPC, 4318 HTTP) in the
 *   namespace dam-cluster's OTEL_COLLECTOR_NAMESPACE names (overlays' `replacements`, label `dam/to-namespace`); it
 *   is used only when dam-config sets OTEL_EXPORTER_OTLP_ENDPOINT.
 * Nothing may reach the Kubernetes API: no workload talks to it (no token is mounted either).
 */
import { CONTAINER_PORT, SERVICES, type ServiceSpec } from './services';

type Obj = Record<string, unknown>;

/** What a policy may name of the cluster's own DNS. */
export const CLUSTER_DNS = { namespace: 'kube-system', podLabels: { 'k8s-app': 'kube-dns' }, port: 53 } as const;
/** PostgreSQL's port (DATABASE_URL's, in every overlay). */
export const DATABASE_PORT = 5432;
/** OTLP: gRPC and HTTP (OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://otel-collector.observability:4318). */
export const OTLP_PORTS = [4317, 4318] as const;
export const OTEL_COLLECTOR_NAMESPACE = 'observability';
/** The label whose value names the dam-cluster key the overlays' `replacements` copy into the policy's egress namespace peer. */
export const TO_NAMESPACE_LABEL = 'dam/to-namespace';

/**
 * Addresses `egress-to-internet` never admits: those the outbound guard refuses that a cluster or a cloud uses
 * (RFC 1918 and CGNAT pod, Service and node ranges, loopback, link-local with the metadata address 169.254.169.254,
 * `this network`, multicast and reserved; IPv6 unique-local, link-local and multicast). Each lies inside what the
 * guard refuses (deploy/test/k8s-egress.unit.test.ts), so the policy never blocks a delivery the guard would make.
 */
export const PRIVATE_IPV4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16', '224.0.0.0/4', '240.0.0.0/4'] as const;
export const PRIVATE_IPV6 = ['fc00::/7', 'fe80::/10', 'ff00::/8'] as const;

const app = (name: string) => ({ matchLabels: { 'app.kubernetes.io/name': name } });
const toPods = (...names: string[]) => names.map((n) => ({ podSelector: app(n) }));
const ports = (...numbers: number[]) => numbers.map((port) => ({ port }));
const oneOf = (names: string[]) => ({ matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: names }] });

/** The services that call `s` over HTTP: those among whose `callers` it is. */
export const calleesOf = (s: Pick<ServiceSpec, 'name'>): string[] => SERVICES.filter((x) => x.callers.includes(s.name)).map((x) => x.name);

/** The workloads besides the services whose connections the egress policies admit (generate.ts names them). */
export interface EgressPeers {
  /** Pods that open connections to the object store: the services with `s3` or `fetchesPresigned`. */
  objectStoreClients: string[];
  /** The Job making MinIO's users. */
  minioUsersJob: string;
}

function policy(name: string, podSelector: Obj, egress: Obj[], extraLabels: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, labels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'policy', 'app.kubernetes.io/part-of': 'dam', ...extraLabels } },
    spec: { podSelector, policyTypes: ['Egress'], ...(egress.length ? { egress } : {}) },
  };
}

/** A service's own connections: NATS, the object store, the services it calls. */
function serviceEgress(s: ServiceSpec, peers: EgressPeers): Obj {
  const callees = calleesOf(s);
  return policy(`${s.name}-egress`, app(s.name), [
    ...(s.nats ? [{ to: toPods('nats'), ports: ports(4222) }] : []),
    ...(peers.objectStoreClients.includes(s.name) ? [{ to: toPods('minio'), ports: ports(9000) }] : []),
    ...(callees.length ? [{ to: toPods(...callees), ports: ports(CONTAINER_PORT) }] : []),
  ]);
}

/** Every egress policy of the base. */
export function egressPolicies(peers: EgressPeers): Obj[] {
  const owners = SERVICES.filter((s) => s.database).map((s) => s.name);
  const outside = SERVICES.filter((s) => s.internet).map((s) => s.name);
  return [
    policy('default-deny-egress', {}, []),
    policy('egress-dns', {}, [
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': CLUSTER_DNS.namespace } }, podSelector: { matchLabels: CLUSTER_DNS.podLabels } }],
        ports: [{ port: CLUSTER_DNS.port, protocol: 'UDP' }, { port: CLUSTER_DNS.port, protocol: 'TCP' }],
      },
    ]),
    ...SERVICES.map((s) => serviceEgress(s, peers)),
    policy('nats-egress', app('nats'), [{ to: toPods('nats'), ports: ports(6222, 4222) }]),
    policy('minio-egress', app('minio'), [{ to: toPods('minio'), ports: ports(9000) }]),
    policy(`${peers.minioUsersJob}-egress`, app(peers.minioUsersJob), [{ to: toPods('minio'), ports: ports(9000) }]),
    // The overlays set the peer: dev keeps its postgres pod, prod names its managed database's addresses.
    policy('egress-to-database', oneOf(owners), [{ to: toPods('postgres'), ports: ports(DATABASE_PORT) }]),
    policy('egress-to-internet', oneOf(outside), [
      // TCP only (HTTP): no UDP out, so no resolver of the internet either (DNS goes through the cluster's).
      { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: [...PRIVATE_IPV4] } }, { ipBlock: { cidr: '::/0', except: [...PRIVATE_IPV6] } }], ports: [{ protocol: 'TCP' }] },
    ]),
    policy(
      'egress-to-otel-collector',
      oneOf(SERVICES.map((s) => s.name)),
      [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': OTEL_COLLECTOR_NAMESPACE } } }], ports: ports(...OTLP_PORTS) }],
      { [TO_NAMESPACE_LABEL]: 'OTEL_COLLECTOR_NAMESPACE' },
    ),
  ];
}
