/**
 * What a platform team's Prometheus (the Prometheus Operator's CRDs) plugs in: a ServiceMonitor per service and for
 * the object store, and a PrometheusRule with the alerts of docs/operations.md ("Metrics", "What to alert on"),
 * written by deploy/k8s/generate-components.ts into the kustomize Component k8s/components/monitoring.
 *
 * How the metrics are served (libs/http/src/http-metrics.ts): every service answers `GET /metrics` on its `http`
 * port; the ConfigMap sets `METRICS_PUBLIC=true`, so any caller the NetworkPolicy admits (the monitoring namespace)
 * is answered without credentials, and the Ingress/HTTPRoutes never route `/metrics`. Every series carries
 * `service="<name>"` (libs/metrics). MinIO's metrics need a bearer token (`MINIO_PROMETHEUS_AUTH_TYPE=jwt`): a JWT
 * made for the `dam-minio-metrics` user (k8s/README.md), read by Prometheus from the Secret `dam-minio-prometheus`.
 * NATS serves JSON only (its monitoring port 8222): the Component adds NATS's Prometheus exporter beside each server.
 */
import { SERVICES } from './services';
import { TRANSFER_ROUTE } from './gateway-api';
import { MONITORING_NAMESPACE } from './generate';

type Obj = Record<string, unknown>;
const labels = (name: string) => ({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'monitoring', 'app.kubernetes.io/part-of': 'dam' });

export const SCRAPE = { interval: '30s', scrapeTimeout: '10s' } as const;
/** The Secret (key `token`) holding the bearer token Prometheus sends to MinIO. */
export const MINIO_TOKEN_SECRET = { name: 'dam-minio-prometheus', key: 'token' } as const;

/** One per service: its Service (label `app.kubernetes.io/name`), port `http`, `/metrics`. */
export function serviceMonitors(): Obj[] {
  const monitor = (name: string, endpoint: Obj): Obj => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name, labels: labels(name) },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': name } },
      endpoints: [{ port: 'http', ...SCRAPE, ...endpoint }],
    },
  });
  return [
    // The services' own `service` label is the Service's name too: kept as scraped, so the alerts read it.
    ...SERVICES.map((s) => monitor(s.name, { path: '/metrics', honorLabels: true })),
    // Cluster-wide figures: every pod answers for the whole cluster, so queries on them take max() over the pods.
    monitor('minio', {
      path: '/minio/v2/metrics/cluster',
      authorization: { type: 'Bearer', credentials: { ...MINIO_TOKEN_SECRET } },
    }),
  ];
}

/** TRANSFER_ROUTE for PromQL, whose regular expressions match the whole label value (RE2, anchored). */
export const TRANSFER_ROUTE_PROMQL = `.*${TRANSFER_ROUTE.source.replace(/\\\//g, '/')}`;
/** A PromQL string literal holds Go escapes: a regex's backslash is written twice. */
const promString = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

/** NATS's exporter, a sidecar reading its own server's monitoring port (the NATS Helm chart's arguments). */
export const NATS_EXPORTER = { image: 'natsio/prometheus-nats-exporter:0.17.3', port: 7777 } as const;

/**
 * The sidecar (a patch of the base's StatefulSet `nats`), a PodMonitor for it, and a policy that
 * lets the monitoring namespace reach its port (the base's NATS policy opens only 4222, 6222 and 8222).
 */
export function natsMetrics(): { patch: { target: Obj; ops: Obj[] }; objects: Obj[] } {
  const container = {
    name: 'metrics',
    image: NATS_EXPORTER.image,
    args: [`-port=${NATS_EXPORTER.port}`, '-connz', '-routez', '-subz', '-varz', '-jsz=all', '-prefix=nats', '-use_internal_server_id', 'http://localhost:8222/'],
    ports: [{ name: 'metrics', containerPort: NATS_EXPORTER.port }],
    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
  };
  return {
    // Appended (a JSON patch: a strategic merge would put it first), so the overlays' patches of container 0 still hit NATS.
    patch: { target: { kind: 'StatefulSet', name: 'nats' }, ops: [{ op: 'add', path: '/spec/template/spec/containers/-', value: container }] },
    objects: [
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'PodMonitor',
        metadata: { name: 'nats', labels: labels('nats') },
        spec: {
          selector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } },
          podMetricsEndpoints: [{ port: 'metrics', path: '/metrics', ...SCRAPE }],
        },
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'nats-metrics', labels: labels('nats-metrics') },
        spec: {
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } },
          policyTypes: ['Ingress'],
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': MONITORING_NAMESPACE } } }], ports: [{ port: NATS_EXPORTER.port }] }],
        },
      },
    ],
  };
}

export interface Alert {
  alert: string;
  expr: string;
  for?: string;
  severity: 'warning' | 'critical';
  summary: string;
}

/**
 * The sketches of docs/operations.md, made rules. Deviations from the sketches: the latency alert leaves out
 * every transfer route (downloads, the edge, uploads: gateway-api.ts TRANSFER_ROUTE), not only uploads, and
 * waits 10 m; alerts the sketch gives no duration get one long enough to skip a single slow scrape.
 */
export const ALERTS: readonly Alert[] = [
  {
    alert: 'DamOutboxLag',
    expr: 'max(outbox_oldest_unpublished_age_seconds) > 60',
    for: '5m',
    severity: 'critical',
    summary: 'Events are committed but not reaching JetStream (NATS down, stream missing, relay stuck): subscribers and conversion see nothing new.',
  },
  {
    alert: 'DamOutboxBacklog',
    expr: 'max(outbox_unpublished_rows) > 1000',
    for: '5m',
    severity: 'warning',
    summary: 'More than 1000 outbox rows wait to be published.',
  },
  {
    alert: 'DamOutboxPublishFailures',
    expr: 'increase(outbox_publish_failures_total[5m]) > 0',
    for: '10m',
    severity: 'warning',
    summary: 'The outbox relay keeps failing to publish a row.',
  },
  {
    alert: 'DamDeadLetters',
    expr: 'increase(events_messages_handled_total{outcome="dead_letter"}[15m]) > 0',
    severity: 'warning',
    summary: 'A message failed every delivery (for conversion the asset is now ERROR).',
  },
  {
    alert: 'DamInvalidMessages',
    expr: 'increase(events_messages_handled_total{outcome="term"}[15m]) > 0',
    severity: 'warning',
    summary: "A producer sends payloads the consumer's schema refuses: a bug or a version skew.",
  },
  {
    alert: 'DamRetryStorm',
    expr: 'sum by (service, durable) (rate(events_messages_handled_total{outcome="nak"}[5m])) > 1',
    for: '5m',
    severity: 'warning',
    summary: 'A consumer keeps failing its messages: one of its dependencies (auth settings, S3) is failing.',
  },
  {
    alert: 'DamHttp5xxRate',
    expr: 'sum by (service) (rate(http_request_duration_seconds_count{status=~"5.."}[5m])) / sum by (service) (rate(http_request_duration_seconds_count[5m])) > 0.02',
    for: '10m',
    severity: 'critical',
    summary: 'More than 2 % of the requests answer 5xx (INTERNAL_ERROR has an error_id in the logs; 503 is a dependency).',
  },
  {
    alert: 'DamUploadsFailing',
    expr: 'increase(upload_duration_seconds_count{outcome="failed"}[10m]) > 0',
    severity: 'critical',
    summary: 'Uploads fail: S3 or metadata unavailable to the upload service.',
  },
  {
    alert: 'DamConversionErrors',
    expr: 'sum(rate(conversions_total{outcome="error"}[15m])) / sum(rate(conversions_total[15m])) > 0.1',
    for: '15m',
    severity: 'warning',
    summary: 'More than 10 % of the conversions fail: many assets end without their conversions.',
  },
  {
    alert: 'DamSlowRoutes',
    expr: `histogram_quantile(0.99, sum by (le, service, route) (rate(http_request_duration_seconds_bucket{route!~"${promString(TRANSFER_ROUTE_PROMQL)}"}[5m]))) > 2`,
    for: '10m',
    severity: 'warning',
    summary: 'The 99th percentile of an API route (transfers left out) is above 2 s.',
  },
  {
    alert: 'DamEventLoopBlocked',
    expr: 'nodejs_eventloop_lag_p99_seconds > 0.5',
    for: '5m',
    severity: 'warning',
    summary: 'A process blocks its event loop.',
  },
];

export function prometheusRule(): Obj {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'dam', labels: labels('dam') },
    spec: {
      groups: [
        {
          name: 'dam',
          rules: ALERTS.map((a) => ({
            alert: a.alert,
            expr: a.expr,
            ...(a.for ? { for: a.for } : {}),
            labels: { severity: a.severity },
            annotations: { summary: a.summary, runbook: 'docs/operations.md, "Metrics" and "When a dependency fails"' },
          })),
        },
      ],
    },
  };
}

export function monitoringKustomization(resources: string[], patches: Array<{ path: string; target: Obj }>): Obj {
  return { apiVersion: 'kustomize.config.k8s.io/v1alpha1', kind: 'Component', resources, patches };
}

