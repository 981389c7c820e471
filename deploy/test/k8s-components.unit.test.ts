/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * k8s/components proven without a cluster (issue 31): the Gateway API and monitoring Components are what
 * deploy/k8s/generate-components.ts makes; each builds with kubectl's kustomize over a copy of each overlay; every
 * object has the shape its CRD asks for the fields used (kubernetes-models has no Gateway API or Prometheus
 * Operator types: zod schemas of those fields instead); the HTTPRoutes route exactly what the overlay's Ingress
 * routes, to the same Services and ports, under the same hosts and certificates, with a timeout on every rule
 * that never cuts a transfer; every service is scraped where it serves /metrics; every alert names only metrics
 * (and labels) that the code exports, and promtool accepts the rules and fires them on the series they are for.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { ROUTES } from '@dam/auth-tokens';
import { COMPONENTS_DIR, renderComponents } from '../k8s/generate-components';
import { HOSTS, isTransferRoute, PLACEHOLDER_HOST, TIMEOUTS, type PublicHost } from '../k8s/gateway-api';
import { ALERTS, MINIO_TOKEN_SECRET, NATS_EXPORTER, NATS_EXPORTER_METRICS, prometheusRule, TRANSFER_ROUTE_PROMQL } from '../k8s/monitoring';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { StatefulSet } from 'kubernetes-models/apps/v1';
import { publicBackendOf, SERVICES } from '../k8s/services';
import { metricsRegistry } from '../../libs/metrics/src';

const ROOT = path.resolve(__dirname, '..', '..');
const OVERLAYS = ['dev', 'prod'] as const;
const COMPONENTS = ['gateway-api', 'monitoring'] as const;

/** A copy of k8s/ in a temp dir with `components:` added to the overlay, built; the repo's overlays stay as they are. */
function buildWith(overlay: string, components: readonly string[]): any[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-k8s-components-'));
  try {
    cpSync(path.join(ROOT, 'k8s'), path.join(dir, 'k8s'), { recursive: true });
    const kustomization = path.join(dir, 'k8s', 'overlays', overlay, 'kustomization.yaml');
    // Exactly the components asked for, whether or not the overlay lists ours already; others it lists stay.
    const doc = parseDocument(readFileSync(kustomization, 'utf8'));
    const ours = COMPONENTS.map((c) => `../../components/${c}`);
    const others = ((doc.toJSON() as { components?: string[] }).components ?? []).filter((c) => !ours.includes(c.replace(/\/$/, '')));
    const listed = [...others, ...components.map((c) => `../../components/${c}`)];
    if (listed.length) doc.set('components', listed);
    else doc.delete('components');
    writeFileSync(kustomization, doc.toString());
    const out = execFileSync('kubectl', ['kustomize', path.dirname(kustomization)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return parseAllDocuments(out)
      .map((d) => d.toJSON())
      .filter(Boolean);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- shapes of the CRD fields used (Gateway API v1, Prometheus Operator monitoring.coreos.com/v1) ----
const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
  .max(63);
const hostname = z
  .string()
  .regex(/^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/)
  .max(253);
const duration = z.string().regex(/^([0-9]{1,5}(h|m|s|ms)){1,4}$/);
const metadata = z.object({ name: dnsLabel, namespace: dnsLabel, labels: z.record(z.string(), z.string()) }).strict();
const port = z.number().int().min(1).max(65535);
const GatewaySchema = z
  .object({
    apiVersion: z.literal('gateway.networking.k8s.io/v1'),
    kind: z.literal('Gateway'),
    metadata,
    spec: z
      .object({
        gatewayClassName: dnsLabel,
        listeners: z
          .array(
            z
              .object({
                name: dnsLabel,
                hostname: hostname.optional(),
                protocol: z.enum(['HTTP', 'HTTPS']),
                port,
                tls: z
                  .object({
                    mode: z.literal('Terminate'),
                    certificateRefs: z
                      .array(z.object({ kind: z.literal('Secret'), name: dnsLabel }).strict())
                      .min(1)
                      .max(64),
                  })
                  .strict()
                  .optional(),
                allowedRoutes: z.object({ namespaces: z.object({ from: z.enum(['Same', 'All', 'Selector']) }).strict() }).strict(),
              })
              .strict()
              .refine((l) => (l.protocol === 'HTTPS') === (l.tls !== undefined), 'HTTPS listeners, and only they, terminate TLS'),
          )
          .min(1)
          .max(64),
      })
      .strict(),
  })
  .strict();
const HTTPRouteSchema = z
  .object({
    apiVersion: z.literal('gateway.networking.k8s.io/v1'),
    kind: z.literal('HTTPRoute'),
    metadata,
    spec: z
      .object({
        parentRefs: z
          .array(z.object({ name: dnsLabel, sectionName: dnsLabel }).strict())
          .min(1)
          .max(32),
        hostnames: z.array(hostname).max(16).optional(),
        rules: z
          .array(
            z
              .object({
                matches: z
                  .array(z.object({ path: z.object({ type: z.literal('PathPrefix'), value: z.string().regex(/^\/[^?#]*$/) }).strict() }).strict())
                  .max(8)
                  .optional(),
                backendRefs: z.array(z.object({ name: dnsLabel, port }).strict()).optional(),
                filters: z
                  .array(
                    z
                      .object({
                        type: z.literal('RequestRedirect'),
                        requestRedirect: z.object({ scheme: z.enum(['http', 'https']), statusCode: z.union([z.literal(301), z.literal(302)]) }).strict(),
                      })
                      .strict(),
                  )
                  .optional(),
                timeouts: z.object({ request: duration }).strict().optional(),
              })
              .strict(),
          )
          .min(1)
          .max(16),
      })
      .strict(),
  })
  .strict();
const ServiceMonitorSchema = z
  .object({
    apiVersion: z.literal('monitoring.coreos.com/v1'),
    kind: z.literal('ServiceMonitor'),
    metadata,
    spec: z
      .object({
        selector: z.object({ matchLabels: z.record(z.string(), z.string()) }).strict(),
        endpoints: z
          .array(
            z
              .object({
                port: dnsLabel,
                path: z.string().startsWith('/'),
                interval: duration,
                scrapeTimeout: duration,
                honorLabels: z.boolean().optional(),
                authorization: z
                  .object({ type: z.literal('Bearer'), credentials: z.object({ name: dnsLabel, key: z.string() }).strict() })
                  .strict()
                  .optional(),
              })
              .strict(),
          )
          .min(1),
      })
      .strict(),
  })
  .strict();
const PrometheusRuleSchema = z
  .object({
    apiVersion: z.literal('monitoring.coreos.com/v1'),
    kind: z.literal('PrometheusRule'),
    metadata,
    spec: z
      .object({
        groups: z.array(
          z
            .object({
              name: z.string(),
              rules: z.array(
                z
                  .object({
                    alert: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
                    expr: z.string().min(1),
                    for: duration.optional(),
                    labels: z.object({ severity: z.enum(['warning', 'critical']) }).strict(),
                    annotations: z.record(z.string(), z.string()),
                  })
                  .strict(),
              ),
            })
            .strict(),
        ),
      })
      .strict(),
  })
  .strict();
const PodMonitorSchema = z
  .object({
    apiVersion: z.literal('monitoring.coreos.com/v1'),
    kind: z.literal('PodMonitor'),
    metadata,
    spec: z
      .object({
        selector: z.object({ matchLabels: z.record(z.string(), z.string()) }).strict(),
        podMetricsEndpoints: z
          .array(z.object({ port: dnsLabel, path: z.string().startsWith('/'), interval: duration, scrapeTimeout: duration }).strict())
          .min(1),
      })
      .strict(),
  })
  .strict();
const SCHEMAS: Record<string, z.ZodType> = {
  Gateway: GatewaySchema,
  HTTPRoute: HTTPRouteSchema,
  ServiceMonitor: ServiceMonitorSchema,
  PodMonitor: PodMonitorSchema,
  PrometheusRule: PrometheusRuleSchema,
};

it('k8s/components is what deploy/k8s/generate-components.ts makes', () => {
  const expected = renderComponents();
  const onDisk = COMPONENTS.flatMap((c) => readdirSync(path.join(COMPONENTS_DIR, c)).map((f) => `${c}/${f}`)).sort();
  expect(onDisk).toEqual(Object.keys(expected).sort());
  for (const [file, text] of Object.entries(expected)) expect(readFileSync(path.join(COMPONENTS_DIR, file), 'utf8')).toBe(text);
});

it('each component builds alone over the dev overlay, adds only its own objects and changes nothing else but the NATS pods', () => {
  const dev = buildWith('dev', []);
  const kinds = { 'gateway-api': ['Gateway', 'HTTPRoute'], monitoring: ['NetworkPolicy', 'PodMonitor', 'PrometheusRule', 'ServiceMonitor'] };
  const same = (a: any, b: any) => a.kind === b.kind && a.metadata.name === b.metadata.name;
  for (const c of COMPONENTS) {
    const built = buildWith('dev', [c]);
    const added = built.filter((o) => !dev.some((d) => same(d, o)));
    expect([...new Set(added.map((o) => o.kind))].sort()).toEqual([...kinds[c]].sort());
    const changed = built.filter((o) => !added.includes(o) && JSON.stringify(o) !== JSON.stringify(dev.find((d) => same(d, o))));
    if (c === 'gateway-api') expect(changed).toEqual([]);
    else {
      // Only the exporter appended to the NATS pods: NATS stays container 0, which the overlays' patches address.
      expect(changed.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['StatefulSet/nats']);
      const before = dev.find((d) => d.kind === 'StatefulSet' && d.metadata.name === 'nats');
      const containers = changed[0].spec.template.spec.containers;
      expect(containers.slice(0, -1)).toEqual(before.spec.template.spec.containers);
      expect(containers.at(-1)).toMatchObject({ name: 'metrics', image: NATS_EXPORTER.image });
      expect({
        ...changed[0],
        spec: {
          ...changed[0].spec,
          template: { ...changed[0].spec.template, spec: { ...changed[0].spec.template.spec, containers: before.spec.template.spec.containers } },
        },
      }).toEqual(before);
    }
    expect(built.length).toBe(dev.length + added.length);
  }
});

describe.each(OVERLAYS)('the %s overlay with both components', (overlay) => {
  let objects: any[];
  beforeAll(() => {
    objects = buildWith(overlay, COMPONENTS);
  });
  const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
  /** The shared ConfigMap, also when an overlay generates it with a hash suffix. */
  const damConfig = () => ofKind('ConfigMap').find((o) => /^dam-config(-[a-z0-9]{10})?$/.test(o.metadata.name));
  const namespace = () => damConfig().metadata.namespace as string;

  it('every Gateway API and Prometheus Operator object has the shape of its CRD, in the overlay namespace', () => {
    const ours = objects.filter((o) => SCHEMAS[o.kind]);
    expect(ours.length).toBeGreaterThan(SERVICES.length);
    for (const o of ours) {
      const parsed = SCHEMAS[o.kind]?.safeParse(o);
      expect({ object: `${o.kind}/${o.metadata.name}`, issues: parsed?.success ? [] : parsed?.error.issues }).toEqual({
        object: `${o.kind}/${o.metadata.name}`,
        issues: [],
      });
      expect(o.metadata.namespace).toBe(namespace());
    }
  });

  /** (host, path) → Service and port number, from the Ingress objects of the overlay. */
  const ingressRoutes = () => {
    const servicePort = (name: string, portName: string) =>
      ofKind('Service')
        .find((s) => s.metadata.name === name)
        ?.spec.ports.find((p: any) => p.name === portName)?.port as number;
    return ofKind('Ingress').flatMap((ing) =>
      ing.spec.rules.flatMap((r: any) =>
        r.http.paths.map((p: any) => ({
          ingress: ing.metadata.name as string,
          host: r.host as string,
          path: p.path as string,
          service: p.backend.service.name as string,
          port: servicePort(p.backend.service.name, p.backend.service.port.name),
          tlsSecret: ing.spec.tls.find((t: any) => t.hosts.includes(r.host))?.secretName as string,
        })),
      ),
    );
  };
  const routeMatches = () =>
    ofKind('HTTPRoute')
      .filter((r) => r.spec.hostnames)
      .flatMap((r) =>
        r.spec.rules.flatMap((rule: any) =>
          rule.matches.map((m: any) => ({
            route: r.metadata.name as string,
            parent: r.spec.parentRefs[0].sectionName as string,
            host: r.spec.hostnames[0] as string,
            path: m.path.value as string,
            service: rule.backendRefs[0].name as string,
            port: rule.backendRefs[0].port as number,
            timeout: rule.timeouts.request as string,
          })),
        ),
      );
  /** Gateway API and Ingress `Prefix` match by whole path elements: `/api` covers `/api/v1`, not `/apix`. */
  const covers = (prefix: string, p: string) => p === prefix || p.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
  /** The rule a request path goes to: the longest matching prefix of its host wins. */
  const ruleFor = (host: string, p: string) =>
    routeMatches()
      .filter((m) => m.host === host && covers(m.path, p))
      .sort((a, b) => b.path.length - a.path.length)[0];

  it('the HTTPRoutes route exactly what the Ingress routes: same hosts, paths, Services and ports', () => {
    const ingress = ingressRoutes();
    const routes = routeMatches();
    expect(ingress.length).toBeGreaterThanOrEqual(5);
    expect(routes.every((m) => !Object.keys(HOSTS).some((h) => m.host === PLACEHOLDER_HOST(h as PublicHost)))).toBe(true);
    // Every Ingress path has a route of its own, to the same backend.
    for (const i of ingress) expect(routes.find((m) => m.host === i.host && m.path === i.path)).toMatchObject({ service: i.service, port: i.port });
    // Every route lies under an Ingress path of its host, to that path's backend: nothing more is exposed.
    for (const m of routes) {
      const under = ingress.filter((i) => i.host === m.host && covers(i.path, m.path));
      expect({ route: `${m.host}${m.path}`, backends: under.map((i) => `${i.service}:${i.port}`) }).toEqual({
        route: `${m.host}${m.path}`,
        backends: [`${m.service}:${m.port}`],
      });
    }
    // And each backend port is one its Service has.
    for (const m of routes)
      expect(
        ofKind('Service')
          .find((s) => s.metadata.name === m.service)
          ?.spec.ports.map((p: any) => p.port),
      ).toContain(m.port);
  });

  it('the Gateway has an HTTPS listener per host, with the Ingress certificate for it; each route attaches to its own', () => {
    const [gw, ...others] = ofKind('Gateway');
    expect(others).toEqual([]);
    for (const i of ingressRoutes()) {
      const m = ruleFor(i.host, i.path);
      const listener = gw.spec.listeners.find((l: any) => l.name === m?.parent);
      expect(listener).toMatchObject({ protocol: 'HTTPS', port: 443, hostname: i.host, tls: { certificateRefs: [{ kind: 'Secret', name: i.tlsSecret }] } });
    }
    // Plain HTTP only redirects to https.
    const http = gw.spec.listeners.find((l: any) => l.protocol === 'HTTP');
    const onHttp = ofKind('HTTPRoute').filter((r) => r.spec.parentRefs.some((p: any) => p.sectionName === http.name));
    expect(onHttp.map((r) => r.spec.rules)).toEqual([[{ filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } }] }]]);
  });

  it('every rule has a timeout; none cuts a transfer, JSON calls keep the Ingress budget, uploads at least its hour', () => {
    const ingress = ingressRoutes();
    const host = (h: 'base' | 'upload' | 'cdn') =>
      ingress.find((i) => i.service === publicBackendOf(SERVICES.find((s) => s.public?.host === h)!))?.host as string;
    const annotation = (name: string) =>
      Number(ofKind('Ingress').find((i) => i.metadata.name === name).metadata.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']);
    for (const m of routeMatches()) expect(m.timeout).toMatch(/^\d+s$/);
    // The gateway's public routes: every download and transfer goes to a rule without a total; the others have
    // the Ingress's 120 s when outside the asset tree (which mixes both, so has none).
    for (const r of ROUTES) {
      const probe = r.pattern.replace(/:[a-z_]+/g, 'x').replace('**', 'x/y');
      const rule = ruleFor(host('base'), probe);
      if (isTransferRoute(r.pattern) || probe.startsWith('/api/v1/assets/'))
        expect({ pattern: r.pattern, timeout: rule?.timeout }).toEqual({ pattern: r.pattern, timeout: TIMEOUTS.transfer });
      else expect({ pattern: r.pattern, timeout: rule?.timeout }).toEqual({ pattern: r.pattern, timeout: `${annotation('dam-api')}s` });
    }
    expect(ruleFor(host('base'), '/console/index.html')?.timeout).toBe(`${annotation('dam-api')}s`);
    expect(ruleFor(host('upload'), '/api/v1/uploads/tus/x')?.timeout).toBe(`${annotation('dam-upload')}s`);
    expect(ruleFor(host('cdn'), '/api/v1/files/x/a.jpg')?.timeout).toBe(TIMEOUTS.transfer);
  });

  it('a ServiceMonitor scrapes /metrics of every service and the object store, on a port the NetworkPolicy opens to a namespace', () => {
    const monitors = ofKind('ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual([...SERVICES.map((s) => s.name), 'minio'].sort());
    for (const m of monitors) {
      const selected = ofKind('Service').filter((s) => Object.entries(m.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v));
      expect(selected.map((s) => s.metadata.name)).toEqual([m.metadata.name]);
      const svc = selected[0];
      const endpoint = m.spec.endpoints[0];
      const svcPort = svc.spec.ports.find((p: any) => p.name === endpoint.port);
      expect(svcPort).toBeDefined();
      // The pod port behind it, by name and number, and the policies that select those pods.
      const workload = objects.find(
        (o) =>
          (o.kind === 'Deployment' || o.kind === 'StatefulSet') &&
          Object.entries(svc.spec.selector).every(([k, v]) => o.spec.template.metadata.labels[k] === v),
      );
      const containerPort = workload.spec.template.spec.containers[0].ports.find(
        (p: any) => p.name === svcPort.targetPort || p.containerPort === svcPort.targetPort,
      );
      const admitted = ofKind('NetworkPolicy')
        .filter((p) => Object.entries(p.spec.podSelector.matchLabels ?? {}).every(([k, v]) => workload.spec.template.metadata.labels[k] === v))
        .flatMap((p) => p.spec.ingress ?? [])
        .filter(
          (rule: any) =>
            rule.from?.some((f: any) => f.namespaceSelector) &&
            rule.ports?.some((p: any) => p.port === containerPort.name || p.port === containerPort.containerPort),
        );
      expect({ monitor: m.metadata.name, admitted: admitted.length > 0 }).toEqual({ monitor: m.metadata.name, admitted: true });
      expect(endpoint.path).toBe(m.metadata.name === 'minio' ? '/minio/v2/metrics/cluster' : '/metrics');
    }
    // The services serve /metrics to any caller the policy admits; MinIO wants its bearer token.
    expect(damConfig().data.METRICS_PUBLIC).toBe('true');
    expect(monitors.find((m) => m.metadata.name === 'minio').spec.endpoints[0].authorization.credentials).toEqual(MINIO_TOKEN_SECRET);
    expect(objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'minio').spec.template.spec.containers[0].env).toContainEqual({
      name: 'MINIO_PROMETHEUS_AUTH_TYPE',
      value: 'jwt',
    });
  });

  it('NATS is scraped through its exporter, a restricted sidecar reachable from the namespaces that scrape the services', () => {
    const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
    expect(() => new StatefulSet(nats).validate()).not.toThrow();
    const exporter = nats.spec.template.spec.containers.find((c: any) => c.name === 'metrics');
    expect(exporter.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(nats.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(exporter.resources.limits.memory).toBeDefined();
    const [monitor] = ofKind('PodMonitor');
    expect(Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => nats.spec.template.metadata.labels[k] === v)).toBe(true);
    expect(exporter.ports.map((p: any) => p.name)).toContain(monitor.spec.podMetricsEndpoints[0].port);
    // Namespaces let in to an internal service's port (auth: no ingress controller in front), and to the exporter's.
    const namespacesTo = (app: string, port: (p: any) => boolean) =>
      ofKind('NetworkPolicy')
        .filter((p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === app)
        .flatMap((p) => p.spec.ingress ?? [])
        .filter((r: any) => r.ports?.some(port))
        .flatMap((r: any) => r.from.map((f: any) => f.namespaceSelector).filter(Boolean));
    for (const p of ofKind('NetworkPolicy')) expect(() => new NetworkPolicy(p).validate()).not.toThrow();
    const scrapers = namespacesTo('auth', (p) => p.port === 'http');
    expect(scrapers.length).toBeGreaterThan(0);
    expect(namespacesTo('nats', (p) => p.port === NATS_EXPORTER.port)).toEqual(scrapers);
  });
});

// ---- the alerts against the code's metrics ----

/** Metric name → its label names, from every `counter|gauge|histogram({ name, labelNames })` of services/ and libs/. */
function metricsInCode(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const dirs = [
    ...readdirSync(path.join(ROOT, 'services')).map((d) => path.join(ROOT, 'services', d, 'src')),
    ...readdirSync(path.join(ROOT, 'libs')).map((d) => path.join(ROOT, 'libs', d, 'src')),
  ];
  const files = dirs.flatMap((d) => {
    try {
      return (readdirSync(d, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => path.join(d, f));
    } catch {
      return [];
    }
  });
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const call of text.matchAll(/\b(counter|gauge|histogram)\s*(?:<[^>]*>)?\(\s*\{/g)) {
      // The object literal of the call, by its braces.
      let depth = 0;
      let end = call.index + call[0].length - 1;
      for (; end < text.length; end++) {
        if (text[end] === '{') depth++;
        else if (text[end] === '}' && --depth === 0) break;
      }
      const body = text.slice(call.index, end);
      const name = /\bname:\s*'([a-zA-Z_:][a-zA-Z0-9_:]*)'/.exec(body)?.[1];
      if (!name) continue;
      const labelNames = [...(/labelNames:\s*\[([^\]]*)\]/.exec(body)?.[1]?.matchAll(/'([a-zA-Z_][a-zA-Z0-9_]*)'/g) ?? [])].map((m) => m[1] as string);
      const names = call[1] === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name];
      for (const n of names) found.set(n, new Set([...labelNames, 'service', ...(n.endsWith('_bucket') ? ['le'] : [])]));
    }
  }
  return found;
}

/** prom-client's default process metrics, from the registry every service's /metrics reads (libs/metrics). */
async function defaultMetrics(): Promise<Map<string, Set<string>>> {
  const found = new Map<string, Set<string>>();
  for (const m of await metricsRegistry().getMetricsAsJSON()) {
    const labels = new Set(['service', ...m.values.flatMap((v) => Object.keys(v.labels))]);
    const names = String(m.type) === 'histogram' ? [`${m.name}_bucket`, `${m.name}_count`, `${m.name}_sum`] : [m.name];
    for (const n of names) found.set(n, n.endsWith('_bucket') ? new Set([...labels, 'le']) : labels);
  }
  return found;
}

/** The metric selectors of a PromQL expression (name and the labels it matches on) and its grouping labels. */
function selectorsOf(expr: string): { metrics: Array<{ name: string; labels: string[] }>; grouping: string[] } {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const grouping = [...noStrings.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) =>
    (m[1] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const rest = noStrings.replace(/\b(?:by|without)\s*\([^)]*\)/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  const metrics: Array<{ name: string; labels: string[] }> = [];
  for (const m of rest.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g)) {
    if (m[3] || /^(and|or|unless|bool|on|ignoring|group_left|group_right|offset)$/.test(m[1] ?? '')) continue;
    metrics.push({ name: m[1] as string, labels: [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1] as string) });
  }
  return { metrics, grouping };
}

describe('the PrometheusRule', () => {
  it("names only metrics, and labels, that the services (or NATS's exporter) export", async () => {
    // NATS's exporter names its series after its flags: JetStream's per stream with -jsz=all (their config, so
    // max_bytes), the server's from -varz, all under -prefix=nats (NATS_EXPORTER_METRICS, from its source).
    expect(NATS_EXPORTER.args).toEqual(expect.arrayContaining(['-jsz=all', '-varz', '-prefix=nats']));
    const exporter = Object.entries(NATS_EXPORTER_METRICS).map(([name, labels]) => [name, new Set(labels)] as const);
    const known = new Map([...metricsInCode(), ...(await defaultMetrics()), ...exporter]);
    // The parser sees what is there: the code's metrics, and nothing in a string.
    expect([...known.keys()]).toEqual(
      expect.arrayContaining(['outbox_oldest_unpublished_age_seconds', 'http_request_duration_seconds_bucket', 'nodejs_eventloop_lag_p99_seconds']),
    );
    expect(selectorsOf('sum by (a) (rate(x_total{b="c"}[5m])) / y > 1')).toEqual({
      metrics: [
        { name: 'x_total', labels: ['b'] },
        { name: 'y', labels: [] },
      ],
      grouping: ['a'],
    });
    const wrong: string[] = [];
    for (const a of ALERTS) {
      const { metrics, grouping } = selectorsOf(a.expr);
      expect(metrics.length).toBeGreaterThan(0);
      for (const m of metrics) {
        const labels = known.get(m.name);
        if (!labels) wrong.push(`${a.alert}: no metric ${m.name}`);
        for (const l of m.labels) if (labels && !labels.has(l)) wrong.push(`${a.alert}: ${m.name} has no label ${l}`);
      }
      for (const g of grouping) if (!metrics.some((m) => known.get(m.name)?.has(g))) wrong.push(`${a.alert}: no metric in it has the label ${g}`);
    }
    expect(wrong).toEqual([]);
  });

  it('the latency alert leaves out exactly the transfer routes', () => {
    const anchored = new RegExp(`^(?:${TRANSFER_ROUTE_PROMQL})$`);
    for (const r of ROUTES)
      expect({ pattern: r.pattern, excluded: anchored.test(r.pattern) }).toEqual({ pattern: r.pattern, excluded: isTransferRoute(r.pattern) });
    for (const transfer of [
      '/api/v1/assets/:id/data',
      '/api/v1/assets/:id/content/:key/download',
      '/api/v1/assets/new/content/original/upload',
      '/api/v1/uploads/tus/:id',
      '/api/v1/files/:id/*file',
    ]) {
      expect({ transfer, excluded: anchored.test(transfer) }).toEqual({ transfer, excluded: true });
    }
    for (const json of ['/api/v1/login', '/api/v1/assets/search', '/api/v1/users/me/uploadkey', 'unmatched'])
      expect({ json, excluded: anchored.test(json) }).toEqual({ json, excluded: false });
  });

  const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
  it('promtool accepts the rules and fires them on the series they are for', () => {
    // deploy/infra/install-deps.sh installs it (Debian's `prometheus`): a missing promtool is a failure, not a skip.
    if (!promtool) throw new Error('promtool is not installed (Debian package `prometheus`, deploy/infra/install-deps.sh)');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-promtool-'));
    try {
      const spec = (prometheusRule() as any).spec;
      writeFileSync(path.join(dir, 'rules.yaml'), stringify(spec));
      const check = spawnSync('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')], { encoding: 'utf8' });
      expect(check.stdout + check.stderr).toContain(`SUCCESS: ${ALERTS.length} rules found`);
      const expected = (name: string, labels: Record<string, string>) => {
        const a = ALERTS.find((x) => x.alert === name);
        return {
          exp_labels: { severity: a?.severity, ...labels },
          exp_annotations: spec.groups[0].rules.find((r: any) => r.alert === name)?.annotations ?? {},
        };
      };
      // Every request of two routes takes more than 2.5 s: the API route alerts, the download does not.
      const slow = (route: string) => [
        { series: `http_request_duration_seconds_bucket{service="gateway",route="${route}",method="GET",status="200",le="2.5"}`, values: '0x30' },
        { series: `http_request_duration_seconds_bucket{service="gateway",route="${route}",method="GET",status="200",le="+Inf"}`, values: '0+10x30' },
      ];
      // One copy of a stream as the exporter reports it: its bytes (a promtool series notation) and its max_bytes.
      const stream = (name: string, server: string, bytes: string, limit: number) => {
        const labels = `server_id="${server}",server_name="nats-${server}",cluster="dam",account="$G",stream_name="${name}",stream_leader="nats-n0",is_stream_leader="${server === 'n0'}"`;
        return [
          { series: `nats_stream_total_bytes{${labels}}`, values: bytes },
          { series: `nats_stream_limit_bytes{${labels}}`, values: `${limit}x34` },
        ];
      };
      const tests = {
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              ...slow('/api/v1/assets/search'),
              ...slow('/api/v1/assets/:id/data'),
              { series: 'outbox_oldest_unpublished_age_seconds{service="metadata"}', values: '0 0 0 0 0 0 0 0 0 0 120x20' },
              { series: 'events_messages_handled_total{service="conversion",durable="conversion-jobs",outcome="dead_letter"}', values: '0x10 1x20' },
              // JetStream (NATS's exporter): the SERVICE_TOKENS bucket fills to 90 % of its max_bytes from minute 5 on, one
              // of its copies (server n1) behind the other; DAM_INTERNAL to 85 %; ASSET_EVENTS holds much but has no
              // limit (-1); COLLECTIONS stays at half.
              ...stream('KV_SERVICE_TOKENS', 'n0', '500x4 900x30', 1000),
              ...stream('KV_SERVICE_TOKENS', 'n1', '500x4 700x30', 1000),
              ...stream('DAM_INTERNAL', 'n0', '500x4 850x30', 1000),
              ...stream('ASSET_EVENTS', 'n0', '500x4 90000x30', -1),
              ...stream('COLLECTIONS', 'n0', '500x34', 1000),
              // Server n0's file store goes to 85 % of max_file_store at minute 5; n1 stays at 10 %.
              { series: 'nats_varz_jetstream_stats_storage{server_id="n0"}', values: '100x4 850x30' },
              { series: 'nats_varz_jetstream_config_max_storage{server_id="n0"}', values: '1000x34' },
              { series: 'nats_varz_jetstream_stats_storage{server_id="n1"}', values: '100x34' },
              { series: 'nats_varz_jetstream_config_max_storage{server_id="n1"}', values: '1000x34' },
            ],
            alert_rule_test: [
              { eval_time: '20m', alertname: 'DamSlowRoutes', exp_alerts: [expected('DamSlowRoutes', { service: 'gateway', route: '/api/v1/assets/search' })] },
              { eval_time: '12m', alertname: 'DamOutboxLag', exp_alerts: [] },
              { eval_time: '16m', alertname: 'DamOutboxLag', exp_alerts: [expected('DamOutboxLag', {})] },
              {
                eval_time: '12m',
                alertname: 'DamDeadLetters',
                exp_alerts: [expected('DamDeadLetters', { service: 'conversion', durable: 'conversion-jobs', outcome: 'dead_letter' })],
              },
              // Over 80 % since minute 5: pending until it lasted 10 minutes, then one alert per stream (not per copy).
              { eval_time: '12m', alertname: 'DamJetStreamLimitNear', exp_alerts: [] },
              { eval_time: '20m', alertname: 'DamJetStreamLimitNear', exp_alerts: [expected('DamJetStreamLimitNear', { stream_name: 'KV_SERVICE_TOKENS' })] },
              { eval_time: '20m', alertname: 'DamEventWindowShrinking', exp_alerts: [expected('DamEventWindowShrinking', { stream_name: 'DAM_INTERNAL' })] },
              { eval_time: '12m', alertname: 'DamJetStreamStoreFull', exp_alerts: [] },
              { eval_time: '20m', alertname: 'DamJetStreamStoreFull', exp_alerts: [expected('DamJetStreamStoreFull', { server_id: 'n0' })] },
            ],
          },
        ],
      };
      writeFileSync(path.join(dir, 'tests.yaml'), stringify(tests));
      const run = spawnSync('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir, encoding: 'utf8' });
      expect({ status: run.status, output: run.stdout + run.stderr }).toMatchObject({ status: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
