/**
 * Writes k8s/base from deploy/k8s/services.ts: per service a Deployment, Service, PodDisruptionBudget,
 * NetworkPolicy and its autoscaler; the shared ConfigMap; the Ingress; a default-deny policy; NATS (3-node
 * JetStream cluster) and MinIO (4 pods, distributed). PostgreSQL for the dev overlay is in k8s/overlays/dev.
 *
 *   pnpm --filter @dam/deploy k8s:generate        (rewrites k8s/base; a test fails when it is out of date)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { BUCKET, METRICS_POLICY, METRICS_USER, minioUsersScript, policyName, s3Policy } from './object-store';
import { callsOthers, CDN_FRONT, CONTAINER_PORT, envName, isCalled, publicBackendOf, SERVICES, trustProxyOf, urlOf, type ServiceSpec } from './services';
import { cdnCacheObjects } from './cdn-cache';
import { natsAuthReloaderContainer } from './nats-reloader';
import { egressPolicies, OTEL_COLLECTOR_NAMESPACE } from './egress';

export const BASE_DIR = path.resolve(__dirname, '..', '..', 'k8s', 'base');
/** The one bucket (S3_BUCKET); the object store's Ingress exposes only it. */
export { BUCKET };
const IMAGE = { runtime: 'ghcr.io/dam-project/dam', media: 'ghcr.io/dam-project/dam-media' } as const;
const PART_OF = { 'app.kubernetes.io/part-of': 'dam' };
const labels = (name: string, component = 'service') => ({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': component, ...PART_OF });
const selector = (name: string) => ({ 'app.kubernetes.io/name': name });
type Obj = Record<string, unknown>;

/**
 * The cluster's own parts, as overlay settings: the ConfigMap `dam-cluster` holds the namespaces its ingress
 * controller, Prometheus, KEDA and the OpenTelemetry collector run in, and its DNS domain. Each overlay's
 * `replacements` copy a namespace into every NetworkPolicy labelled `dam/from-namespace: <its key>` (ingress) or
 * `dam/to-namespace: <its key>` (egress; one namespace peer per rule), so an overlay that merges other values into
 * dam-cluster changes them everywhere.
 */
export const CLUSTER_SETTINGS = 'dam-cluster';
export const FROM_NAMESPACE_LABEL = 'dam/from-namespace';
export const INGRESS_NAMESPACE = 'ingress-nginx';
export const MONITORING_NAMESPACE = 'monitoring';
export const KEDA_NAMESPACE = 'keda';
export const CLUSTER_DOMAIN = 'cluster.local';
/** Replaced by each overlay with its namespace (`replacements` from the nats Service's namespace). */
export const NAMESPACE_PLACEHOLDER = 'NAMESPACE';
const fromNamespace = (name: string) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });
const fromPods = (...names: string[]) => names.map((n) => ({ podSelector: { matchLabels: selector(n) } }));

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};
const podSecurity = (uid: number) => ({ runAsNonRoot: true, runAsUser: uid, runAsGroup: uid, fsGroup: uid, seccompProfile: { type: 'RuntimeDefault' } });
export const HOSTNAME = 'kubernetes.io/hostname';
export const ZONE = 'topology.kubernetes.io/zone';
/**
 * Where the pods of one workload go: spread over zones and nodes, and preferably never two on one node. Every
 * term selects the workload's own pods only (its name), so other workloads' pods never count. The prod overlay
 * makes the anti-affinity required for NATS and MinIO (one pod per node: losing a node loses one replica).
 */
const placement = (name: string) => ({
  affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: HOSTNAME, labelSelector: { matchLabels: selector(name) } } }] } },
  topologySpreadConstraints: [ZONE, HOSTNAME].map((topologyKey) => ({ maxSkew: 1, topologyKey, whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector(name) } })),
});

/**
 * Each workload runs as a ServiceAccount of its own (`dam-<workload>`), never the namespace's `default`: RBAC, cloud
 * workload identity (IRSA, GKE Workload Identity) and `imagePullSecrets` can then be given to one workload without
 * reaching the others. None of them talks to the Kubernetes API, so no token is mounted (the account's and the pod's
 * `automountServiceAccountToken: false`).
 */
export const serviceAccountOf = (workload: string): string => `dam-${workload}`;
const serviceAccount = (workload: string, component: string): Obj => ({
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: { name: serviceAccountOf(workload), labels: labels(serviceAccountOf(workload), component) },
  automountServiceAccountToken: false,
});
/** What a pod template says about its identity and its priority. */
const podIdentity = (workload: string, priority: PriorityName) => ({
  serviceAccountName: serviceAccountOf(workload),
  automountServiceAccountToken: false,
  priorityClassName: priority,
});

/**
 * Priorities (cluster-scoped: the overlays' namespace transformer leaves them without a namespace). Below the
 * system's (system-cluster-critical is 2000000000, user classes may go up to 1000000000) and above the default 0:
 * - `dam-infrastructure` (NATS, MinIO, dev's PostgreSQL): everything depends on their quorum, so a pending pod of
 *   theirs preempts lower-priority pods (ours or other teams').
 * - `dam-services` (the services and the minio-users Job): scheduled before default-priority pods, but they never
 *   evict anyone (`preemptionPolicy: Never`): a burst of autoscaled workers must not push out other teams' pods.
 */
export const PRIORITY_CLASSES = {
  'dam-infrastructure': { value: 1_000_000, preemptionPolicy: 'PreemptLowerPriority', description: 'DAM: NATS JetStream and the object store (the suite needs their quorum).' },
  'dam-services': { value: 100_000, preemptionPolicy: 'Never', description: 'DAM: the services; scheduled before default-priority pods, never preempting them.' },
} as const;
export type PriorityName = keyof typeof PRIORITY_CLASSES;
const priorityClasses = (): Obj[] =>
  Object.entries(PRIORITY_CLASSES).map(([name, p]) => ({
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name, labels: labels(name, 'scheduling') },
    value: p.value,
    globalDefault: false,
    preemptionPolicy: p.preemptionPolicy,
    description: p.description,
  }));

const MiB = 1024 ** 2;
const UNITS: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: MiB, Gi: 1024 ** 3, Ti: 1024 ** 4 };
/** A Kubernetes quantity of bytes (`256Mi`, `20Gi`, `1Ti`, `8G`) as a number. */
export function bytesOf(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMGT]i?)?$/.exec(quantity);
  if (!m) throw new Error(`not a quantity of bytes: ${quantity}`);
  return Number(m[1]) * (UNITS[m[2] ?? ''] as number);
}
const mebibytes = (bytes: number): string => (bytes % 1024 ** 3 === 0 ? `${bytes / 1024 ** 3}Gi` : `${Math.ceil(bytes / MiB)}Mi`);
/** What a container writes besides its volumes: its logs (the kubelet keeps 5 × 10 MiB by default), with room. */
export const EPHEMERAL_HEADROOM = '256Mi';
/**
 * ephemeral-storage for a container that mounts these emptyDirs: the scheduler reserves their size limits on the
 * node (without it, pods with 20 GiB of scratch are packed as if they wrote nothing and the node hits
 * DiskPressure); the limit adds the logs. The kubelet also evicts a pod over the sum of its containers' limits.
 */
export function ephemeralStorage(sizeLimits: readonly string[]): { request: string; limit: string } {
  const sum = sizeLimits.reduce((n, q) => n + bytesOf(q), 0);
  return { request: mebibytes(sum), limit: mebibytes(sum + bytesOf(EPHEMERAL_HEADROOM)) };
}
/** Writable volumes by name → size limit, as emptyDirs. */
const emptyDirs = (sizes: Record<string, string>) => Object.entries(sizes).map(([name, sizeLimit]) => ({ name, emptyDir: { sizeLimit } }));
const resources = (cpu: string, memory: { request: string; limit: string }, scratch: readonly string[]) => {
  const disk = ephemeralStorage(scratch);
  return { requests: { cpu, memory: memory.request, 'ephemeral-storage': disk.request }, limits: { memory: memory.limit, 'ephemeral-storage': disk.limit } };
};

/**
 * A first install: metadata waits for its migrations, the object store's quorum (4 pods) and the JetStream meta
 * leader, then makes the streams; the other services wait for those streams before they listen. Each service's
 * startupProbe allows this long (plus its own `startupSeconds`) before liveness takes over, so no starting pod is
 * killed and none ends in CrashLoopBackOff; liveness itself stays short (a minute) once the pod has started.
 */
export const FIRST_INSTALL_SECONDS = 300;
const STARTUP_PERIOD_SECONDS = 5;

/** The database's CA (Secret `dam-db-ca`, key `ca.crt`), for DATABASE_URL's `sslrootcert`: optional, so a database
 *  without TLS or with a CA Node already trusts needs no Secret. */
export const DB_CA = { secret: 'dam-db-ca', mountPath: '/etc/dam/db-ca', volume: 'db-ca' } as const;

/** The shared configuration: every service reads what it needs of it (secrets are in Secrets, never here). */
export function sharedConfig(): Obj {
  // The addresses of the services others call (nobody reads GATEWAY_URL: no service calls the gateway).
  const urls = Object.fromEntries(SERVICES.filter(isCalled).map((s) => [`${envName(s.name)}_URL`, urlOf(s.name)]));
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'dam-config', labels: labels('dam-config', 'config') },
    data: {
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      PORT: String(CONTAINER_PORT),
      LOG_LEVEL: 'info',
      METRICS_PUBLIC: 'true',
      NATS_URL: [0, 1, 2].map((i) => `nats://nats-${i}.nats:4222`).join(','),
      NATS_STREAM_REPLICAS: '3',
      // JetStream's budget: metadata sizes the streams from it, every service the KV buckets it opens (libs/events).
      NATS_STREAMS_MAX_BYTES: streamsMaxBytes(NATS_VOLUME),
      S3_ENDPOINT: 'http://minio:9000',
      S3_BUCKET: BUCKET,
      S3_REGION: 'us-east-1',
      S3_PUBLIC_URL: 'https://s3.dam.example.com',
      // object_storage links are presigned for the address clients reach: the dam-s3 Ingress (SigV4 signs the host).
      S3_PUBLIC_ENDPOINT: 'https://s3.dam.example.com',
      // The console's address; also read by kustomize: the overlays copy its host into upload's CORS_ALLOWED_ORIGINS
      // and the gateway-api Component into its HTTPRoute and Gateway (no service reads it).
      PUBLIC_BASE_URL: consoleOrigin(),
      PUBLIC_UPLOAD_URL: 'https://upload.dam.example.com',
      PUBLIC_CDN_URL: 'https://cdn.dam.example.com',
      MAX_UPLOAD_BYTES: String(5 * 1024 ** 3),
      // No proxy trusted unless a Deployment says otherwise (those behind the Ingress do: trustProxyOf in services.ts).
      TRUST_PROXY: 'none',
      WEBHOOK_ALLOW_HOSTS: '',
      ...urls,
    },
  };
}

/** The keys of its own object-store user, in a service's Secret (never the root user's: object-store.ts). */
export const S3_SECRET_KEYS = ['S3_ACCESS_KEY', 'S3_SECRET_KEY'] as const;
/**
 * What each service's own Secret `dam-<name>` holds (deploy/k8s/secrets.ts makes them): SERVICE_KEY only for a
 * service that calls another (search and addon call none, and their schemas do not read it).
 */
export function secretKeysOf(s: ServiceSpec): string[] {
  return [...(callsOthers(s) ? ['SERVICE_KEY'] : []), ...(s.nats ? ['NATS_NKEY_SEED'] : []), ...(s.database ? ['DATABASE_URL'] : []), ...(s.s3 ? S3_SECRET_KEYS : []), ...(s.secretKeys ?? [])];
}
/** The Secret every service reads: the JWT secret (and the one before its last rotation) and the trusted service keys. */
export const SHARED_SECRET_KEYS = ['JWT_SECRET', 'JWT_PREVIOUS_SECRET', 'SERVICE_TRUSTED_KEYS'];
/** Keys a Secret made by an earlier release lacks (the pods start without them until its next re-render). */
const OPTIONAL_SECRET_KEYS = ['JWT_PREVIOUS_SECRET'];
/** MinIO's root user (only MinIO and the minio-users Job read it), and Prometheus' MinIO user. */
export const MINIO_ROOT_SECRET = 'dam-minio';
export const MINIO_METRICS_SECRET = 'dam-minio-metrics';

function deployment(s: ServiceSpec): Obj {
  const scratch = Object.entries(s.scratch).map(([mountPath, size], i) => ({ name: `scratch-${i}`, mountPath, size }));
  const secretEnv = (key: string, secret: string) => ({ name: key, valueFrom: { secretKeyRef: { name: secret, key, ...(OPTIONAL_SECRET_KEYS.includes(key) ? { optional: true } : {}) } } });
  const env = [
    ...Object.entries({
      ...s.env,
      SHUTDOWN_TIMEOUT_MS: String(s.drainSeconds * 1000),
      TRUST_PROXY: trustProxyOf(s),
      ...(s.database ? { DB_POOL_MAX: String(s.database.poolMax) } : {}),
      // The edges' rate limits are the deployment's totals: each replica admits its share of the ready replicas.
      ...(s.public ? { RATE_LIMIT_PEERS: peersOf(s.name) } : {}),
      // Browsers may call it from the console only (the overlays' replacements keep it on PUBLIC_BASE_URL's host).
      ...(s.consoleCors ? { CORS_ALLOWED_ORIGINS: consoleOrigin() } : {}),
    }).map(([name, value]) => ({ name, value })),
    // Of the shared secrets, only what the service uses: the JWT secret for the edges and auth, the callers' public
    // keys for a service that others call.
    ...SHARED_SECRET_KEYS.filter((k) => (k.startsWith('JWT_') ? s.jwt : isCalled(s))).map((k) => secretEnv(k, 'dam-shared')),
    ...secretKeysOf(s).map((k) => secretEnv(k, `dam-${s.name}`)),
  ];
  const image = `${IMAGE[s.image]}:0.1.0`;
  const dbCa = s.database ? [{ name: DB_CA.volume, mountPath: DB_CA.mountPath, readOnly: true }] : [];
  const volumeMounts = [...scratch.map((v) => ({ name: v.name, mountPath: v.mountPath })), ...dbCa];
  const startupSeconds = FIRST_INSTALL_SECONDS + (s.startupSeconds ?? 0);
  const container = {
    name: s.name,
    image,
    args: [s.name],
    ports: [{ name: 'http', containerPort: CONTAINER_PORT }],
    envFrom: [{ configMapRef: { name: 'dam-config' } }],
    env,
    resources: resources(s.cpu, s.memory, scratch.map((v) => v.size)),
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 3 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 6 },
    startupProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: STARTUP_PERIOD_SECONDS, failureThreshold: Math.ceil(startupSeconds / STARTUP_PERIOD_SECONDS) },
    // Endpoints are removed before the drain starts: in-flight requests end, new ones go elsewhere.
    lifecycle: { preStop: { sleep: { seconds: 5 } } },
    securityContext: restricted,
    volumeMounts,
  };
  // Migrations before the service starts (idempotent, under an advisory lock: safe twice and with several replicas).
  const migrate = s.database
    ? [
        {
          name: 'migrate',
          image,
          args: ['migrate', s.name],
          envFrom: [{ configMapRef: { name: 'dam-config' } }],
          env: [secretEnv('DATABASE_URL', `dam-${s.name}`)],
          resources: resources('50m', { request: '128Mi', limit: '256Mi' }, [s.scratch['/tmp'] as string]),
          securityContext: restricted,
          volumeMounts: [{ name: 'scratch-0', mountPath: '/tmp' }, ...dbCa],
        },
      ]
    : [];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: s.name, labels: labels(s.name) },
    spec: {
      // Autoscaled services leave the count to their autoscaler.
      ...(s.scale ? {} : { replicas: 1 }),
      revisionHistoryLimit: 5,
      selector: { matchLabels: selector(s.name) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: labels(s.name) },
        spec: {
          ...podIdentity(s.name, 'dam-services'),
          enableServiceLinks: false,
          terminationGracePeriodSeconds: s.drainSeconds + 15,
          securityContext: podSecurity(10001),
          ...placement(s.name),
          ...(migrate.length ? { initContainers: migrate } : {}),
          containers: [container],
          volumes: [
            ...scratch.map((v) => ({ name: v.name, emptyDir: { sizeLimit: v.size } })),
            ...(s.database ? [{ name: DB_CA.volume, secret: { secretName: DB_CA.secret, optional: true } }] : []),
          ],
        },
      },
    },
  };
}

const service = (name: string, ports: Obj[], extra: Obj = {}): Obj => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, labels: labels(name) },
  spec: { selector: selector(name.replace(/-hl$/, '')), ports, ...extra },
});
/** The headless Service whose addresses are an edge's ready replicas (RATE_LIMIT_PEERS, libs/http rate-limit.ts). */
export const peersOf = (name: string): string => `${name}-peers`;
const peersService = (name: string): Obj => ({
  apiVersion: 'v1',
  kind: 'Service',
  // Not the edge's own labels: what selects its Service (a ServiceMonitor) must not select this one too.
  metadata: { name: peersOf(name), labels: { 'dam/peers-of': name, ...PART_OF } },
  spec: { clusterIP: 'None', selector: selector(name), ports: [{ name: 'http', port: CONTAINER_PORT, targetPort: 'http' }] },
});
const pdb = (name: string, budget: Obj = { maxUnavailable: 1 }): Obj => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name, labels: labels(name) },
  spec: { ...budget, selector: { matchLabels: selector(name) } },
});

/**
 * Who may open connections to the pods of `name` (everything else is refused by the default-deny policy): pods of
 * this namespace, and Prometheus on `metrics` (its only namespace peer: the label lets the overlays' replacements
 * put dam-cluster's MONITORING_NAMESPACE there).
 */
const ingressPolicy = (name: string, component: string, ingress: Obj[], metrics: string | number): Obj => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, labels: { ...labels(name, component), [FROM_NAMESPACE_LABEL]: 'MONITORING_NAMESPACE' } },
  spec: {
    podSelector: { matchLabels: selector(name) },
    policyTypes: ['Ingress'],
    ingress: [...ingress, { from: [fromNamespace(MONITORING_NAMESPACE)], ports: [{ port: metrics }] }],
  },
});

/** Its callers (and the cache tier in front of `{cdn}`), and Prometheus for /metrics; the ingress controller's way in is clusterPolicies'. */
function networkPolicy(s: ServiceSpec): Obj {
  const from = [...s.callers, ...(publicBackendOf(s) === CDN_FRONT ? [CDN_FRONT] : [])];
  return ingressPolicy(s.name, 'service', from.length ? [{ from: fromPods(...from), ports: [{ port: 'http' }] }] : [], 'http');
}

/** The settings of dam-cluster: the namespaces of the cluster's parts and its DNS domain (MinIO's peers). */
function clusterSettings(): Obj {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CLUSTER_SETTINGS, labels: labels(CLUSTER_SETTINGS, 'config') },
    data: { INGRESS_NAMESPACE, MONITORING_NAMESPACE, KEDA_NAMESPACE, OTEL_COLLECTOR_NAMESPACE, CLUSTER_DOMAIN },
  };
}

/** A policy admitting one namespace of the cluster's parts (`setting`: its key in dam-cluster) to these pods' ports. */
function fromClusterPart(name: string, setting: 'INGRESS_NAMESPACE' | 'KEDA_NAMESPACE', pods: string[], ports: Array<string | number>): Obj {
  const namespace = { INGRESS_NAMESPACE, KEDA_NAMESPACE }[setting];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, labels: { ...labels(name, 'policy'), [FROM_NAMESPACE_LABEL]: setting } },
    spec: {
      podSelector: { matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: pods }] },
      policyTypes: ['Ingress'],
      ingress: [{ from: [fromNamespace(namespace)], ports: ports.map((port) => ({ port })) }],
    },
  };
}

/**
 * The cluster's parts besides Prometheus (in each workload's own policy): the ingress controller reaches the public
 * services and the object store (presigned links, public URLs); KEDA NATS' monitoring port (consumer lag).
 */
function clusterPolicies(): Obj[] {
  const publicServices = [...new Set(SERVICES.filter((s) => s.public).map(publicBackendOf))];
  return [
    fromClusterPart('from-ingress-controller', 'INGRESS_NAMESPACE', [...publicServices, 'minio'], ['http', 9000]),
    fromClusterPart('from-keda', 'KEDA_NAMESPACE', ['nats'], [8222]),
  ];
}

function autoscaler(s: ServiceSpec): Obj | undefined {
  if (!s.scale) return undefined;
  if ('cpu' in s.scale) {
    return {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: s.name, labels: labels(s.name) },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: s.name },
        minReplicas: 1,
        maxReplicas: 4,
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: s.scale.cpu } } }],
      },
    };
  }
  // KEDA's NATS JetStream scaler reads the consumer's pending messages from the servers' monitoring port; the
  // postgresql scaler (first container's DATABASE_URL) a count of work waiting in the service's own database.
  const due = s.scale.due;
  return {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: s.name, labels: labels(s.name) },
    spec: {
      scaleTargetRef: { name: s.name },
      minReplicaCount: 1,
      maxReplicaCount: s.scale.max,
      pollingInterval: 15,
      cooldownPeriod: 300,
      // When KEDA cannot read a trigger 3 times in a row (NATS' monitoring port or the database unreachable, the
      // leader moving), it holds the workload at this count instead of keeping the last one or scaling in: the
      // overlay's minimum (an overlay that changes minReplicaCount changes this with it).
      fallback: { failureThreshold: 3, replicas: 1 },
      // Scale in gently: workers drain (transcode up to 2 minutes), so one pod a minute after 5 minutes of less work.
      advanced: {
        horizontalPodAutoscalerConfig: {
          behavior: { scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] } },
        },
      },
      triggers: [
        {
          type: 'nats-jetstream',
          metadata: {
            // `nats.<namespace>.svc`: the overlays put their namespace in (a kustomize replacement); no cluster domain,
            // KEDA's resolver completes it, also for the leader's name it puts in front (`nats-0.nats.<ns>.svc`).
            natsServerMonitoringEndpoint: `nats.${NAMESPACE_PLACEHOLDER}.svc:8222`,
            account: '$G',
            stream: s.scale.stream,
            consumer: s.scale.consumer,
            lagThreshold: String(s.scale.lag),
            useHttps: 'false',
          },
        },
        ...(due ? [{ type: 'postgresql', metadata: { connectionFromEnv: 'DATABASE_URL', query: due.query, targetQueryValue: String(due.perReplica) } }] : []),
      ],
    },
  };
}

const HOSTS = { base: 'dam.example.com', upload: 'upload.dam.example.com', cdn: 'cdn.dam.example.com' } as const;
/** The console's origin (`{base}`): dam-config's PUBLIC_BASE_URL, and the one origin upload's CORS admits. */
export const consoleOrigin = (): string => `https://${HOSTS.base}`;

/** `{base}`, `{upload}` and `{cdn}`; only the API paths are routed (never /metrics, /healthz, /readyz). */
function ingresses(): Obj[] {
  const one = (name: string, hosts: Array<{ host: string; service: string; paths: string[] }>, annotations: Record<string, string>): Obj => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, labels: labels(name, 'ingress'), annotations },
    spec: {
      ingressClassName: 'nginx',
      tls: [{ hosts: hosts.map((h) => h.host), secretName: `${name}-tls` }],
      rules: hosts.map((h) => ({
        host: h.host,
        http: { paths: h.paths.map((p) => ({ path: p, pathType: 'Prefix', backend: { service: { name: h.service, port: { name: 'http' } } } })) },
      })),
    },
  });
  const routes = (host: 'base' | 'cdn' | 'upload') =>
    SERVICES.filter((s) => s.public?.host === host).map((s) => ({ host: HOSTS[host], service: publicBackendOf(s), paths: s.public?.paths ?? [] }));
  return [
    one('dam-api', [...routes('base'), ...routes('cdn')], {
      'nginx.ingress.kubernetes.io/proxy-body-size': '16m',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '120',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '120',
    }),
    // Uploads stream through (no buffering, no size cap at the proxy: the upload service enforces MAX_UPLOAD_BYTES).
    one('dam-upload', routes('upload'), {
      'nginx.ingress.kubernetes.io/proxy-body-size': '0',
      'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '3600',
    }),
    // Presigned `object_storage` links and public URLs of Set Public Access go to the object store itself: its
    // bucket path only (path-style URLs, libs/storage), never `/minio/` (admin API, metrics, health) or the rest of
    // the S3 API (listing buckets); the console has no Service at all.
    one('dam-s3', [{ host: 's3.dam.example.com', service: 'minio', paths: [`/${BUCKET}`] }], {
      'nginx.ingress.kubernetes.io/proxy-body-size': '0',
      'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
    }),
  ];
}

const NATS_CONF = `# NATS JetStream, one of three: routes to every peer, the suite's identities included from the Secret dam-nats-auth.
server_name: $POD_NAME
listen: 0.0.0.0:4222
http: 0.0.0.0:8222
pid_file: /var/run/nats/nats.pid
lame_duck_duration: 30s
lame_duck_grace_period: 10s
jetstream {
  store_dir: /data/jetstream
  max_file_store: $JS_MAX_FILE_STORE
  max_memory_store: 256M
}
cluster {
  name: dam
  listen: 0.0.0.0:6222
  routes: [nats://nats-0.nats:6222, nats://nats-1.nats:6222, nats://nats-2.nats:6222]
}
include ./auth/auth.conf
`;

/**
 * JetStream's file store is capped below its volume: ext4 keeps 5 % for root (NATS runs as uid 1000) and the raft
 * logs of the meta and stream groups live beside it. The cap is the container's JS_MAX_FILE_STORE (bytes), next to
 * the volume's size: an overlay that resizes the volume sets both (deploy/test/k8s-production.unit.test.ts).
 */
export const JS_FILE_STORE_SHARE = 0.8;
export const NATS_VOLUME = '10Gi';
export const jsMaxFileStore = (volume: string): string => String(Math.floor(bytesOf(volume) * JS_FILE_STORE_SHARE));
/**
 * What the five streams and the KV buckets may hold on each server (dam-config's NATS_STREAMS_MAX_BYTES, split among
 * them by libs/events: STREAM_BYTE_SHARES, KV_BUCKET_BYTE_SHARES): three quarters of JetStream's cap, the rest for
 * raft and headroom. JetStream reserves it up front, so it must stay below the cap; an overlay that resizes NATS'
 * volume sets it too.
 */
export const STREAMS_SHARE = 0.75;
export const streamsMaxBytes = (volume: string): string => String(Math.floor(Number(jsMaxFileStore(volume)) * STREAMS_SHARE));

const NATS_SCRATCH = { run: '16Mi' };
const NATS_IMAGE = 'nats:2.10.22-alpine';

function nats(): Obj[] {
  const name = 'nats';
  return [
    serviceAccount(name, 'messaging'),
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'nats-config', labels: labels(name, 'messaging') }, data: { 'nats.conf': NATS_CONF } },
    // Headless: stable names for the routes and for clients (nats-0.nats ...); publishNotReady so peers find each other at start.
    service(name, [{ name: 'client', port: 4222 }, { name: 'cluster', port: 6222 }, { name: 'monitor', port: 8222 }], { clusterIP: 'None', publishNotReadyAddresses: true }),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, labels: labels(name, 'messaging') },
      spec: {
        serviceName: name,
        replicas: 3,
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: selector(name) },
        template: {
          metadata: { labels: labels(name, 'messaging') },
          spec: {
            ...podIdentity(name, 'dam-infrastructure'),
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 60,
            securityContext: podSecurity(1000),
            // The auth-reloader signals the server when dam-nats-auth changes (an upgrade's permissions, a rotation).
            shareProcessNamespace: true,
            ...placement(name),
            containers: [
              {
                name,
                image: NATS_IMAGE,
                args: ['--config', '/etc/nats/nats.conf'],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'JS_MAX_FILE_STORE', value: jsMaxFileStore(NATS_VOLUME) },
                ],
                ports: [
                  { name: 'client', containerPort: 4222 },
                  { name: 'cluster', containerPort: 6222 },
                  { name: 'monitor', containerPort: 8222 },
                ],
                resources: resources('250m', { request: '512Mi', limit: '1Gi' }, Object.values(NATS_SCRATCH)),
                readinessProbe: { httpGet: { path: '/healthz?js-enabled-only=true', port: 'monitor' }, periodSeconds: 10 },
                livenessProbe: { httpGet: { path: '/healthz?js-enabled-only=true', port: 'monitor' }, periodSeconds: 30, failureThreshold: 5 },
                startupProbe: { httpGet: { path: '/healthz', port: 'monitor' }, periodSeconds: 5, failureThreshold: 60 },
                lifecycle: { preStop: { exec: { command: ['nats-server', '-sl=ldm=/var/run/nats/nats.pid'] } } },
                securityContext: restricted,
                volumeMounts: [
                  { name: 'config', mountPath: '/etc/nats/nats.conf', subPath: 'nats.conf' },
                  { name: 'auth', mountPath: '/etc/nats/auth', readOnly: true },
                  { name: 'data', mountPath: '/data' },
                  { name: 'run', mountPath: '/var/run/nats' },
                ],
              },
              natsAuthReloaderContainer({
                image: NATS_IMAGE,
                volumes: { auth: 'auth', run: 'run' },
                resources: resources('10m', { request: '16Mi', limit: '32Mi' }, Object.values(NATS_SCRATCH)),
                securityContext: restricted,
              }) as Obj,
            ],
            volumes: [
              { name: 'config', configMap: { name: 'nats-config' } },
              { name: 'auth', secret: { secretName: 'dam-nats-auth' } },
              ...emptyDirs(NATS_SCRATCH),
            ],
          },
        },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: NATS_VOLUME } } } }],
      },
    },
    pdb(name, { minAvailable: 2 }),
    ingressPolicy(name, 'messaging', [
      { from: fromPods(...SERVICES.filter((s) => s.nats).map((s) => s.name)), ports: [{ port: 4222 }] },
      { from: fromPods(name), ports: [{ port: 6222 }, { port: 4222 }] },
    ], 8222),
  ];
}

/** The pods that open connections to the object store: its users, and those fetching presigned URLs (the gateway). */
export const objectStoreClients = (): string[] => SERVICES.filter((s) => s.s3 || s.fetchesPresigned).map((s) => s.name);

const MINIO_SCRATCH = { home: '16Mi', tmp: '256Mi' };

function minio(): Obj[] {
  const name = 'minio';
  return [
    serviceAccount(name, 'storage'),
    service(`${name}-hl`, [{ name: 'api', port: 9000 }], { clusterIP: 'None', publishNotReadyAddresses: true }),
    service(name, [{ name: 'http', port: 9000, targetPort: 'api' }]),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, labels: labels(name, 'storage') },
      spec: {
        serviceName: `${name}-hl`,
        replicas: 4,
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: selector(name) },
        template: {
          metadata: { labels: labels(name, 'storage') },
          spec: {
            ...podIdentity(name, 'dam-infrastructure'),
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 30,
            securityContext: podSecurity(1000),
            ...placement(name),
            containers: [
              {
                name,
                image: 'quay.io/minio/minio:RELEASE.2024-12-18T13-15-44Z',
                // Distributed mode: four pods, erasure-coded across them; Kubernetes expands $(POD_NAMESPACE) and
                // $(CLUSTER_DOMAIN) (dam-cluster).
                args: ['server', 'http://minio-{0...3}.minio-hl.$(POD_NAMESPACE).svc.$(CLUSTER_DOMAIN)/data', '--address', ':9000', '--console-address', ':9001'],
                env: [
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  { name: 'CLUSTER_DOMAIN', valueFrom: { configMapKeyRef: { name: CLUSTER_SETTINGS, key: 'CLUSTER_DOMAIN' } } },
                  { name: 'MINIO_ROOT_USER', valueFrom: { secretKeyRef: { name: MINIO_ROOT_SECRET, key: 'MINIO_ROOT_USER' } } },
                  { name: 'MINIO_ROOT_PASSWORD', valueFrom: { secretKeyRef: { name: MINIO_ROOT_SECRET, key: 'MINIO_ROOT_PASSWORD' } } },
                  // Metrics need a bearer token made for the `metrics` user (mc admin prometheus generate): k8s/README.md.
                  { name: 'MINIO_PROMETHEUS_AUTH_TYPE', value: 'jwt' },
                ],
                ports: [
                  { name: 'api', containerPort: 9000 },
                  { name: 'console', containerPort: 9001 },
                ],
                resources: resources('250m', { request: '512Mi', limit: '2Gi' }, Object.values(MINIO_SCRATCH)),
                readinessProbe: { httpGet: { path: '/minio/health/ready', port: 'api' }, periodSeconds: 10 },
                livenessProbe: { httpGet: { path: '/minio/health/live', port: 'api' }, periodSeconds: 30, failureThreshold: 5 },
                // A first start formats the drives once all four pods answer (Parallel start, but volumes bind late).
                startupProbe: { httpGet: { path: '/minio/health/live', port: 'api' }, periodSeconds: STARTUP_PERIOD_SECONDS, failureThreshold: FIRST_INSTALL_SECONDS / STARTUP_PERIOD_SECONDS },
                securityContext: restricted,
                volumeMounts: [
                  { name: 'data', mountPath: '/data' },
                  { name: 'home', mountPath: '/.minio' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              ...emptyDirs(MINIO_SCRATCH),
            ],
          },
        },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } } }],
      },
    },
    pdb(name, { maxUnavailable: 1 }),
    ...minioUsers(),
    ingressPolicy(name, 'storage', [
      { from: fromPods(...objectStoreClients(), MINIO_USERS_JOB), ports: [{ port: 9000 }] },
      { from: fromPods(name), ports: [{ port: 9000 }] },
    ], 9000),
  ];
}

const MINIO_USERS_JOB = 'minio-users';
const MC_SCRATCH = { tmp: '16Mi' };

/**
 * Each service's own MinIO user (object-store.ts): the policies as a ConfigMap, and a Job that makes the bucket,
 * the policies and the users with the root credentials, which no service ever gets. The Job removes itself an
 * hour after it ends, so the next `kubectl apply -k` runs it again (after new Secrets: the keys are rotated).
 */
function minioUsers(): Obj[] {
  const users = SERVICES.filter((s) => s.s3).map((s) => ({ name: s.name, policy: s3Policy(s.s3 ?? { read: [] }), secret: `dam-${s.name}`, prefix: envName(s.name) }));
  const secretEnv = (name: string, secret: string, key: string) => ({ name, valueFrom: { secretKeyRef: { name: secret, key } } });
  const policies: Record<string, string> = {
    ...Object.fromEntries(users.map((u) => [`${policyName(u.name)}.json`, JSON.stringify(u.policy, null, 2)])),
    [`${policyName(METRICS_USER)}.json`]: JSON.stringify(METRICS_POLICY, null, 2),
  };
  const script = minioUsersScript([
    ...users.map((u) => ({ policy: policyName(u.name), accessVar: `${u.prefix}_S3_ACCESS_KEY`, secretVar: `${u.prefix}_S3_SECRET_KEY` })),
    { policy: policyName(METRICS_USER), accessVar: 'MINIO_METRICS_ACCESS_KEY', secretVar: 'MINIO_METRICS_SECRET_KEY' },
  ]);
  return [
    serviceAccount(MINIO_USERS_JOB, 'storage'),
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'minio-policies', labels: labels('minio-policies', 'storage') }, data: policies },
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: MINIO_USERS_JOB, labels: labels(MINIO_USERS_JOB, 'storage') },
      spec: {
        backoffLimit: 30,
        activeDeadlineSeconds: 1800,
        ttlSecondsAfterFinished: 3600,
        template: {
          metadata: { labels: labels(MINIO_USERS_JOB, 'storage') },
          spec: {
            restartPolicy: 'OnFailure',
            ...podIdentity(MINIO_USERS_JOB, 'dam-services'),
            enableServiceLinks: false,
            securityContext: podSecurity(1000),
            containers: [
              {
                name: 'mc',
                image: 'quay.io/minio/mc:RELEASE.2024-11-21T17-21-54Z',
                command: ['/bin/sh', '-c', script],
                env: [
                  secretEnv('MINIO_ROOT_USER', MINIO_ROOT_SECRET, 'MINIO_ROOT_USER'),
                  secretEnv('MINIO_ROOT_PASSWORD', MINIO_ROOT_SECRET, 'MINIO_ROOT_PASSWORD'),
                  // mc's alias `dam` from the environment (Kubernetes expands the two variables above).
                  { name: 'MC_HOST_dam', value: 'http://$(MINIO_ROOT_USER):$(MINIO_ROOT_PASSWORD)@minio:9000' },
                  { name: 'MC_CONFIG_DIR', value: '/tmp/.mc' },
                  ...users.flatMap((u) => [
                    secretEnv(`${u.prefix}_S3_ACCESS_KEY`, u.secret, 'S3_ACCESS_KEY'),
                    secretEnv(`${u.prefix}_S3_SECRET_KEY`, u.secret, 'S3_SECRET_KEY'),
                  ]),
                  secretEnv('MINIO_METRICS_ACCESS_KEY', MINIO_METRICS_SECRET, 'MINIO_METRICS_ACCESS_KEY'),
                  secretEnv('MINIO_METRICS_SECRET_KEY', MINIO_METRICS_SECRET, 'MINIO_METRICS_SECRET_KEY'),
                ],
                resources: resources('50m', { request: '64Mi', limit: '256Mi' }, Object.values(MC_SCRATCH)),
                securityContext: restricted,
                volumeMounts: [
                  { name: 'policies', mountPath: '/policies', readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'policies', configMap: { name: 'minio-policies' } },
              ...emptyDirs(MC_SCRATCH),
            ],
          },
        },
      },
    },
  ];
}

/** Every file of k8s/base: name → objects. */
export function baseFiles(): Record<string, Obj[]> {
  const files: Record<string, Obj[]> = {
    // dam-config is generated by kustomize from dam-config.env (renderBase): its name carries a hash of its content.
    'config.yaml': [clusterSettings()],
    'network-policy-default.yaml': [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'default-deny-ingress', labels: labels('default-deny-ingress', 'policy') },
        spec: { podSelector: {}, policyTypes: ['Ingress'] },
      },
      ...clusterPolicies(),
    ],
    // Egress: each pod only the connections it needs (deploy/k8s/egress.ts).
    'network-policy-egress.yaml': egressPolicies({ objectStoreClients: objectStoreClients(), minioUsersJob: MINIO_USERS_JOB }),
    'ingress.yaml': ingresses(),
    'nats.yaml': nats(),
    'minio.yaml': minio(),
    'priority-classes.yaml': priorityClasses(),
    // The cache tier in front of {cdn} (deploy/k8s/cdn-cache.ts).
    'cdn-cache.yaml': cdnCacheObjects({
      labels,
      selector,
      serviceAccount,
      podIdentity: (workload) => podIdentity(workload, 'dam-services'),
      placement,
      restricted,
      podSecurity,
      resources,
      pdb: (name) => pdb(name),
      edge: SERVICES.find((s) => publicBackendOf(s) === CDN_FRONT)?.name ?? 'link-signing',
      firstInstallSeconds: FIRST_INSTALL_SECONDS,
    }),
  };
  for (const s of SERVICES) {
    const scaler = autoscaler(s);
    files[`${s.name}.yaml`] = [
      serviceAccount(s.name, 'service'),
      deployment(s),
      service(s.name, [{ name: 'http', port: 80, targetPort: 'http' }]),
      ...(s.public ? [peersService(s.name)] : []),
      pdb(s.name),
      networkPolicy(s),
      ...(scaler ? [scaler] : []),
    ];
  }
  return files;
}

const HEADER = '# Generated by deploy/k8s/generate.ts from deploy/k8s/services.ts: edit those, then `pnpm --filter @dam/deploy k8s:generate`.\n';

/** dam-config's values, one `KEY=value` a line, for kustomize's configMapGenerator. */
export const SHARED_CONFIG_ENV = 'dam-config.env';

/**
 * dam-config is a configMapGenerator, not a resource: kustomize names it `dam-config-<hash of its data>` and rewrites
 * every envFrom that names it, so a changed value (here or merged in by an overlay) is a new name in the pod templates
 * and the Deployments roll; `kubectl apply -k` alone never restarts pods for a ConfigMap. The replacements that read
 * it (upload's CORS, the gateway-api Component's hosts) find it by its name without the hash.
 */
export function renderBase(): Record<string, string> {
  const files = baseFiles();
  const out: Record<string, string> = {};
  for (const [file, objects] of Object.entries(files)) out[file] = HEADER + objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n');
  const config = sharedConfig() as { metadata: { name: string; labels: Record<string, string> }; data: Record<string, string> };
  for (const [key, value] of Object.entries(config.data)) if (/[\n\r]/.test(value)) throw new Error(`${key}: an env file holds one line per value`);
  out[SHARED_CONFIG_ENV] = HEADER + Object.entries(config.data).map(([key, value]) => `${key}=${value}\n`).join('');
  out['kustomization.yaml'] =
    HEADER +
    stringify(
      {
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: Object.keys(files).sort(),
        configMapGenerator: [{ name: config.metadata.name, envs: [SHARED_CONFIG_ENV], options: { labels: config.metadata.labels } }],
      },
      { lineWidth: 0 },
    );
  return out;
}

if (require.main === module) {
  mkdirSync(BASE_DIR, { recursive: true });
  for (const [file, text] of Object.entries(renderBase())) writeFileSync(path.join(BASE_DIR, file), text);
  console.log(`wrote ${Object.keys(renderBase()).length} files to ${path.relative(process.cwd(), BASE_DIR)}`);
}
