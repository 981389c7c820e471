/**
 * Gateway API, the primary way in (issue 31, review D11): HTTPRoutes for the suite's public addresses and a Gateway
 * example, written by deploy/k8s/generate-components.ts into the kustomize Component k8s/components/gateway-api.
 *
 * The routes carry exactly what the base's Ingress routes (generate.ts, from the `public` entries of services.ts
 * and the object store's bucket path): {base} `/api`, `/console` → gateway; {upload} `/api` → upload; {cdn}
 * `/api/v1/files` → cdn-cache (the cache tier in front of link-signing's edge: cdn-cache.ts); {s3} `/<bucket>` → minio. What only a controller can express (body size,
 * request buffering, idle timeouts) stays with the Ingress variant and, for a Gateway, with the controller's own
 * policy objects.
 *
 * Host names are not written here: the Component copies them from the public URLs in `dam-config` (the overlay's
 * `configMapGenerator` merge runs before components), so the routes and the links the services build cannot
 * name different hosts.
 */
import { ROUTES } from '@dam/auth-tokens';
import { BUCKET } from './object-store';
import { publicBackendOf, SERVICES, type ServiceName } from './services';

type Obj = Record<string, unknown>;
export type PublicHost = 'base' | 'upload' | 'cdn' | 's3';

/** The `dam-config` key whose URL names each host (`https://<host>`), and the TLS Secret the Ingress uses for it. */
export const HOSTS: Record<PublicHost, { configKey: string; tlsSecret: string }> = {
  base: { configKey: 'PUBLIC_BASE_URL', tlsSecret: 'dam-api-tls' },
  cdn: { configKey: 'PUBLIC_CDN_URL', tlsSecret: 'dam-api-tls' },
  upload: { configKey: 'PUBLIC_UPLOAD_URL', tlsSecret: 'dam-upload-tls' },
  s3: { configKey: 'S3_PUBLIC_URL', tlsSecret: 'dam-s3-tls' },
};
/** Before the Component's replacements run; never left in a built overlay (the test checks). */
export const PLACEHOLDER_HOST = (host: PublicHost): string => `${host}.host.invalid`;

export const GATEWAY_NAME = 'dam';
/** Overlays patch it to their controller's class (e.g. `eg`, `istio`, `cilium`, `nginx`). */
export const GATEWAY_CLASS = 'dam';
/** Every Service of a service listens on 80 (generate.ts); MinIO's on 9000. */
const SERVICE_PORT = 80;
const MINIO_SERVICE = { name: 'minio', port: 9000 } as const;

/**
 * Gateway API timeouts are totals (GEP-1742: from the request's start to the end of its response), not the idle
 * timeouts ingress-nginx's `proxy-read-timeout` sets. A total fits a JSON call; it would cut a large download or
 * upload in the middle. So:
 * - JSON calls: 120 s, the Ingress's 120 s (the gateway's own UPSTREAM_TIMEOUT_MS of 60 s ends a silent upstream first);
 * - uploads: 3600 s, the upload Ingress's figure; a tus PATCH that is cut resumes from its offset;
 * - bytes out (downloads, the edge, presigned object-store links): `0s`, which the spec defines as no timeout,
 *   written out because implementations' defaults differ (Envoy's route default is 15 s). Idle limits are the
 *   services' own (UPSTREAM_TIMEOUT_MS, S3_TIMEOUT_MS, the server's request timeout) and the controller's policy.
 */
export const TIMEOUTS = { json: '120s', upload: '3600s', transfer: '0s' } as const;

/**
 * A public route whose duration is a transfer of file bytes (a download, the edge, an upload): everything under
 * `/api/v1/assets` that reads data, a conversion or content, the catch-all `**`, and upload's and the edge's
 * routes. Used for the timeouts above and by the latency alert (monitoring.ts), which must not fire on them.
 */
export const TRANSFER_ROUTE = /(\/data|\/download|\/\*\*|\/conversions\/:key|upload|\/tus.*|^\/api\/v1\/files.*)$/;
export const isTransferRoute = (pattern: string): boolean => TRANSFER_ROUTE.test(pattern);

/**
 * `/api/v1/<first segment>` prefixes of the gateway's route table (libs/auth-tokens) under which no route transfers
 * bytes: these get the JSON timeout; the rest of `/api` (the asset tree, which holds every download) gets none.
 */
export function jsonPrefixes(): string[] {
  const first = (pattern: string) => pattern.split('/').slice(0, 4).join('/');
  const all = [...new Set(ROUTES.map((r) => first(r.pattern)))];
  return all.filter((p) => !ROUTES.some((r) => first(r.pattern) === p && isTransferRoute(r.pattern))).sort();
}

interface Rule {
  prefixes: string[];
  backend: { name: string; port: number };
  timeout: string;
}

/** Gateway API allows at most 8 matches per rule. */
const chunk = <T>(items: T[], size: number): T[][] => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));

/** What each host routes: the Ingress's paths, the {base} `/api` split further only to give JSON calls their timeout. */
export function routeRules(): Record<PublicHost, Rule[]> {
  const byHost = (host: 'base' | 'upload' | 'cdn') => SERVICES.filter((s) => s.public?.host === host);
  const rules = (host: 'base' | 'upload' | 'cdn', timeoutOf: (s: ServiceName, path: string) => string): Rule[] =>
    byHost(host).flatMap((s) => (s.public?.paths ?? []).map((p) => ({ prefixes: [p], backend: { name: publicBackendOf(s), port: SERVICE_PORT }, timeout: timeoutOf(s.name, p) })));
  const base = rules('base', (_s, p) => (p === '/api' ? TIMEOUTS.transfer : TIMEOUTS.json));
  // The JSON prefixes go to the same backend as the `/api` they sit under; the longest prefix wins in Gateway API.
  const api = base.find((r) => r.prefixes[0] === '/api');
  const json = api ? chunk(jsonPrefixes(), 8).map((prefixes) => ({ prefixes, backend: api.backend, timeout: TIMEOUTS.json })) : [];
  return {
    base: [...base, ...json],
    upload: rules('upload', () => TIMEOUTS.upload),
    cdn: rules('cdn', () => TIMEOUTS.transfer),
    s3: [{ prefixes: [`/${BUCKET}`], backend: { ...MINIO_SERVICE }, timeout: TIMEOUTS.transfer }],
  };
}

const labels = (name: string) => ({ 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'gateway-api', 'app.kubernetes.io/part-of': 'dam' });
const listenerName = (host: PublicHost) => `https-${host}`;
export const routeName = (host: PublicHost): string => `dam-${host}`;
const HOST_ORDER: PublicHost[] = ['base', 'upload', 'cdn', 's3'];

/**
 * The example Gateway: one HTTPS listener per host (TLS ends here, with the Ingress's Secrets), and plain HTTP only
 * to redirect. Routes attach from this namespace only. A cluster with a shared Gateway deletes this one in the
 * overlay and points the routes' `parentRefs` at it (its listeners must then allow routes from this namespace).
 */
export function gateway(): Obj {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: GATEWAY_NAME, labels: labels(GATEWAY_NAME) },
    spec: {
      gatewayClassName: GATEWAY_CLASS,
      listeners: [
        ...HOST_ORDER.map((host) => ({
          name: listenerName(host),
          hostname: PLACEHOLDER_HOST(host),
          protocol: 'HTTPS',
          port: 443,
          tls: { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: HOSTS[host].tlsSecret }] },
          allowedRoutes: { namespaces: { from: 'Same' } },
        })),
        { name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'Same' } } },
      ],
    },
  };
}

export function httpRoutes(): Obj[] {
  const rules = routeRules();
  const routes = HOST_ORDER.map((host) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: routeName(host), labels: labels(routeName(host)) },
    spec: {
      parentRefs: [{ name: GATEWAY_NAME, sectionName: listenerName(host) }],
      hostnames: [PLACEHOLDER_HOST(host)],
      rules: rules[host].map((r) => ({
        matches: r.prefixes.map((value) => ({ path: { type: 'PathPrefix', value } })),
        backendRefs: [{ name: r.backend.name, port: r.backend.port }],
        timeouts: { request: r.timeout },
      })),
    },
  }));
  const redirect = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'dam-https-redirect', labels: labels('dam-https-redirect') },
    spec: {
      parentRefs: [{ name: GATEWAY_NAME, sectionName: 'http' }],
      rules: [{ filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } }] }],
    },
  };
  return [...routes, redirect];
}

/**
 * The Component: the objects, and replacements that copy each host name out of its URL in `dam-config`
 * (`https://dam.example.com` → `dam.example.com`) into the route and the Gateway's listener.
 */
export function gatewayApiKustomization(resources: string[]): Obj {
  return {
    apiVersion: 'kustomize.config.k8s.io/v1alpha1',
    kind: 'Component',
    resources,
    replacements: HOST_ORDER.map((host) => ({
      source: { kind: 'ConfigMap', name: 'dam-config', fieldPath: `data.${HOSTS[host].configKey}`, options: { delimiter: '/', index: 2 } },
      targets: [
        { select: { kind: 'HTTPRoute', name: routeName(host) }, fieldPaths: ['spec.hostnames.0'] },
        { select: { kind: 'Gateway', name: GATEWAY_NAME }, fieldPaths: [`spec.listeners.[name=${listenerName(host)}].hostname`] },
      ],
    })),
  };
}
