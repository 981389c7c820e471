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
import { KV_BUCKETS, STREAM_DISCARD, STREAMS } from '@dam/events';
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
export const NATS_EXPORTER = {
  image: 'natsio/prometheus-nats-exporter:0.17.3',
  port: 7777,
  // `-jsz=all` asks /jsz for streams with their configuration (their max_bytes: nats_stream_limit_bytes).
  args: ['-connz', '-routez', '-subz', '-varz', '-jsz=all', '-prefix=nats', '-use_internal_server_id'],
} as const;

/** The labels of the exporter's stream series (collector/jsz.go: the server's, then the stream's). */
const STREAM_SERIES_LABELS = ['server_id', 'server_name', 'cluster', 'domain', 'meta_leader', 'is_meta_leader', 'account', 'account_id', 'stream_name', 'stream_leader', 'is_stream_leader', 'stream_raft_group'];
/**
 * The exporter's series the alerts read, with their labels, as the pinned exporter (0.17.3) names them under
 * `-prefix=nats`: collector/jsz.go's `<prefix>_stream_total_bytes` and `<prefix>_stream_limit_bytes` (max_bytes, -1
 * without one) per stream and server holding a copy, and collector.go's flattening of /varz, `<prefix>_varz_jetstream_
 * stats_storage` (bytes in the file store) and `..._config_max_storage` (max_file_store), per server.
 */
export const NATS_EXPORTER_METRICS: Readonly<Record<string, readonly string[]>> = {
  nats_stream_total_bytes: STREAM_SERIES_LABELS,
  nats_stream_limit_bytes: STREAM_SERIES_LABELS,
  nats_varz_jetstream_stats_storage: ['server_id'],
  nats_varz_jetstream_config_max_storage: ['server_id'],
};

/**
 * The streams that refuse writes at their max_bytes (discard new: the schemas, the collections and every KV bucket,
 * `KV_<bucket>`), and those that drop their oldest messages instead (libs/events STREAM_DISCARD).
 */
const REFUSING_STREAMS = [...STREAMS.filter((s) => String(STREAM_DISCARD[s]) === 'new'), ...KV_BUCKETS.map((b) => `KV_${b}`)];
const WINDOW_STREAMS = STREAMS.filter((s) => String(STREAM_DISCARD[s]) !== 'new');
/** The fill of each stream (the highest copy), of those named. */
const streamFill = (names: readonly string[]) => `max by (stream_name) (nats_stream_total_bytes{stream_name=~"${names.join('|')}"} / (nats_stream_limit_bytes > 0))`;

/**
 * The sidecar (a patch of the base's StatefulSet `nats`), a PodMonitor for it, and a policy that
 * lets the monitoring namespace reach its port (the base's NATS policy opens only 4222, 6222 and 8222).
 */
export function natsMetrics(): { patch: { target: Obj; ops: Obj[] }; objects: Obj[] } {
  const container = {
    name: 'metrics',
    image: NATS_EXPORTER.image,
    args: [`-port=${NATS_EXPORTER.port}`, ...NATS_EXPORTER.args, 'http://localhost:8222/'],
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
  /** Where docs/operations.md says what to do (default: "Metrics" and "When a dependency fails"). */
  runbook?: string;
}

const JETSTREAM_RUNBOOK = 'docs/operations.md, "Stream sizes"';

/**
 * The sketches of docs/operations.md, made rules, and JetStream's room (NATS's exporter): each stream and bucket
 * against its max_bytes, each server's file store against max_file_store. Deviations from the sketches: the latency alert leaves out
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
    // JetStream's budget (NATS_STREAMS_MAX_BYTES) split into each stream's and bucket's max_bytes: a full one refuses.
    alert: 'DamJetStreamLimitNear',
    expr: `${streamFill(REFUSING_STREAMS)} > 0.8`,
    for: '10m',
    severity: 'critical',
    summary:
      'A stream or KV bucket that refuses writes at its max_bytes is over 80 % of it: when full, DATA_SCHEMAS or COLLECTIONS stop the outbox (events late), SERVICE_TOKENS refuses claims (each verifier then relies on its own memory of used tokens). Raise NATS_STREAMS_MAX_BYTES (and the NATS volume).',
    runbook: JETSTREAM_RUNBOOK,
  },
  {
    alert: 'DamEventWindowShrinking',
    expr: `${streamFill(WINDOW_STREAMS)} > 0.8`,
    for: '10m',
    severity: 'warning',
    summary:
      'An event stream is over 80 % of its max_bytes: at the limit it drops its oldest messages, so it keeps less than its max_age (subscribers away longer miss events). Raise NATS_STREAMS_MAX_BYTES if the window matters.',
    runbook: JETSTREAM_RUNBOOK,
  },
  {
    alert: 'DamJetStreamStoreFull',
    expr: 'nats_varz_jetstream_stats_storage / (nats_varz_jetstream_config_max_storage > 0) > 0.8',
    for: '10m',
    severity: 'critical',
    summary: "A NATS server's JetStream file store is over 80 % of max_file_store: when full, every stream and bucket on it refuses writes.",
    runbook: JETSTREAM_RUNBOOK,
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
            annotations: { summary: a.summary, runbook: a.runbook ?? 'docs/operations.md, "Metrics" and "When a dependency fails"' },
          })),
        },
      ],
    },
  };
}

export function monitoringKustomization(resources: string[], patches: Array<{ path: string; target: Obj }>): Obj {
  return { apiVersion: 'kustomize.config.k8s.io/v1alpha1', kind: 'Component', resources, patches };
}

