/**
 * The cache tier in front of `{cdn}` (issue 33): nginx with deploy/cache's configuration, between the Ingress and
 * link-signing's edge. generate.ts writes it into k8s/base/cdn-cache.yaml; the Ingress's (and the Gateway API
 * Component's) `{cdn}` route goes to its Service.
 *
 * - ConfigMap `cdn-cache`: nginx.conf rendered from deploy/cache/nginx-cdn.conf.template, and purge.js.
 * - Deployment `cdn-cache`: the official nginx image (it has the njs module and slice), non-root, read-only root;
 *   the cache on an emptyDir (each replica its own; `max_size` below the volume's limit).
 * - Service `cdn-cache` (80 → 8080) for the Ingress; headless `cdn-cache-purge` (8081): link-signing resolves it to
 *   every ready replica and POSTs each the keys of a purged or replaced asset (CDN_TIER_PURGE_URLS).
 * - NetworkPolicies: in, the ingress controller on 8080 (generate.ts' `from-ingress-controller`) and link-signing on
 *   8081; out, link-signing's pods on 8080 only (and the cluster's DNS, as every pod).
 */
import { readFileSync } from 'node:fs';
import { CDN_CACHE_PURGE_JS, renderCdnCacheConfig } from '../cache/nginx-cdn';
import { CDN_FRONT, CONTAINER_PORT } from './services';

type Obj = Record<string, unknown>;

export const CDN_CACHE = CDN_FRONT;
export const CDN_CACHE_PURGE_SERVICE = 'cdn-cache-purge';
export const CDN_CACHE_PURGE_PORT = 8081;
/** The official image, pinned: nginx 1.27 with njs 0.8 (ngx_http_js_module) and the slice module. */
export const CDN_CACHE_IMAGE = 'nginx:1.27.3';
/** The image's `nginx` user. */
const NGINX_UID = 101;
/** The cache volume; nginx's max_size stays below it (its manager trims after the fact, and files are written first). */
export const CDN_CACHE_VOLUME = '10Gi';
const CDN_CACHE_MAX_SIZE = '9g';
const CONF_DIR = '/etc/nginx/cdn';
const SCRATCH = { cache: { mountPath: '/var/cache/nginx/cdn', size: CDN_CACHE_VOLUME }, tmp: { mountPath: '/tmp', size: '64Mi' } } as const;
/** link-signing's purge target (its CDN_TIER_PURGE_URLS). */
export const CDN_CACHE_PURGE_URL = `http://${CDN_CACHE_PURGE_SERVICE}:${CDN_CACHE_PURGE_PORT}/purge`;

export interface CdnCacheHelpers {
  labels(name: string, component?: string): Record<string, string>;
  selector(name: string): Record<string, string>;
  serviceAccount(workload: string, component: string): Obj;
  podIdentity(workload: string): Obj;
  placement(name: string): Obj;
  restricted: Obj;
  podSecurity(uid: number): Obj;
  resources(cpu: string, memory: { request: string; limit: string }, scratch: readonly string[]): Obj;
  pdb(name: string): Obj;
  /** The link-signing workload it fronts. */
  edge: string;
  /** Every workload's startupProbe budget (generate.ts FIRST_INSTALL_SECONDS). */
  firstInstallSeconds: number;
}

/** nginx.conf as the pods read it. */
export function cdnCacheConf(edge: string): string {
  return renderCdnCacheConfig({
    upstream: `${edge}:80`,
    listen: String(CONTAINER_PORT),
    purgeListen: String(CDN_CACHE_PURGE_PORT),
    cacheDir: SCRATCH.cache.mountPath,
    runDir: SCRATCH.tmp.mountPath, // an emptyDir: nginx makes its temporary folders, not the pid file's
    purgeJs: `${CONF_DIR}/purge.js`,
    // The NetworkPolicy admits link-signing alone to the purge port; pod addresses are not known here.
    purgeAllow: 'all',
    errorLog: 'stderr',
    maxSize: CDN_CACHE_MAX_SIZE,
  });
}

export function cdnCacheObjects(h: CdnCacheHelpers): Obj[] {
  const name = CDN_CACHE;
  const policy = (policyName: string, spec: Obj): Obj => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: policyName, labels: h.labels(policyName, 'policy') },
    spec,
  });
  return [
    h.serviceAccount(name, 'cache'),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, labels: h.labels(name, 'cache') },
      data: { 'nginx.conf': cdnCacheConf(h.edge), 'purge.js': readFileSync(CDN_CACHE_PURGE_JS, 'utf8') },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, labels: h.labels(name, 'cache') },
      spec: {
        replicas: 1,
        revisionHistoryLimit: 5,
        selector: { matchLabels: h.selector(name) },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
        template: {
          metadata: { labels: h.labels(name, 'cache') },
          spec: {
            ...h.podIdentity(name),
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 30,
            securityContext: h.podSecurity(NGINX_UID),
            ...h.placement(name),
            containers: [
              {
                name: 'nginx',
                image: CDN_CACHE_IMAGE,
                // Not the image's entry point (it edits /etc/nginx, read-only here); -e: no default error log file.
                command: ['nginx', '-e', 'stderr', '-c', `${CONF_DIR}/nginx.conf`],
                ports: [
                  { name: 'http', containerPort: CONTAINER_PORT },
                  { name: 'purge', containerPort: CDN_CACHE_PURGE_PORT },
                ],
                resources: h.resources('250m', { request: '64Mi', limit: '256Mi' }, [SCRATCH.cache.size, SCRATCH.tmp.size]),
                readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 3 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 6 },
                // As every workload's (the review's D12): a first install's time, though nginx answers at once.
                startupProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5, failureThreshold: Math.ceil(h.firstInstallSeconds / 5) },
                // Endpoints go before nginx stops (SIGQUIT ends it gracefully: the image's STOPSIGNAL).
                lifecycle: { preStop: { sleep: { seconds: 5 } } },
                securityContext: h.restricted,
                volumeMounts: [
                  { name: 'config', mountPath: CONF_DIR, readOnly: true },
                  { name: 'cache', mountPath: SCRATCH.cache.mountPath },
                  { name: 'tmp', mountPath: SCRATCH.tmp.mountPath },
                ],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name } },
              { name: 'cache', emptyDir: { sizeLimit: SCRATCH.cache.size } },
              { name: 'tmp', emptyDir: { sizeLimit: SCRATCH.tmp.size } },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, labels: h.labels(name, 'cache') },
      spec: { selector: h.selector(name), ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      // Not the tier's own labels: what selects its Service must not select this one too.
      metadata: { name: CDN_CACHE_PURGE_SERVICE, labels: { 'dam/peers-of': name, 'app.kubernetes.io/part-of': 'dam' } },
      spec: { clusterIP: 'None', selector: h.selector(name), ports: [{ name: 'purge', port: CDN_CACHE_PURGE_PORT, targetPort: 'purge' }] },
    },
    h.pdb(name),
    // In: link-signing's purges (the ingress controller's way in is generate.ts' from-ingress-controller).
    policy(name, {
      podSelector: { matchLabels: h.selector(name) },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: h.selector(h.edge) } }], ports: [{ port: CDN_CACHE_PURGE_PORT }] }],
    }),
    // Out: the edge only.
    policy(`${name}-egress`, {
      podSelector: { matchLabels: h.selector(name) },
      policyTypes: ['Egress'],
      egress: [{ to: [{ podSelector: { matchLabels: h.selector(h.edge) } }], ports: [{ port: CONTAINER_PORT }] }],
    }),
    // The edge's purges to every replica of the tier.
    policy(`${h.edge}-to-${name}`, {
      podSelector: { matchLabels: h.selector(h.edge) },
      policyTypes: ['Egress'],
      egress: [{ to: [{ podSelector: { matchLabels: h.selector(name) } }], ports: [{ port: CDN_CACHE_PURGE_PORT }] }],
    }),
  ];
}
