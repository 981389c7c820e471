/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * Issue 33: the nginx cache tier in front of `{cdn}` in both rendered overlays. The Ingress and the Gateway API send
 * `{cdn}` to it; it is configured by deploy/cache's template (proxy_cache on the signed URL and its slice, one
 * upstream fetch at a time, njs purge) and nginx accepts that configuration; its NetworkPolicies admit the ingress
 * controller in and link-signing's purges, and let it reach link-signing's edge and nothing else; link-signing is
 * told where to purge and counts both proxies in front of it.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CDN_CACHE_PURGE_JS } from '../cache/nginx-cdn';
import { evaluateFlow, foreignPod, workloadPod, type Endpoint } from '../k8s/network-policy-eval';
import { build, OVERLAYS } from './k8s-render';

const INGRESS = foreignPod('ingress-nginx', { 'app.kubernetes.io/name': 'ingress-nginx' });

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const pod = (name: string): Endpoint => {
    const p = workloadPod(objects, name);
    if (!p) throw new Error(`no workload ${name}`);
    return p;
  };
  const admitted = (from: Endpoint, to: string, port: number) => evaluateFlow(objects, { from, to: pod(to), port, protocol: 'TCP' }).admitted;

  it('routes {cdn} through the cache tier, in the Ingress and in the Gateway API routes', () => {
    const cdnHost = (
      named('ConfigMap', objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('dam-config'))?.metadata.name)?.data.PUBLIC_CDN_URL as string
    ).replace('https://', '');
    const backends = objects
      .filter((o) => o.kind === 'Ingress')
      .flatMap((i) => i.spec.rules.filter((r: any) => r.host === cdnHost).flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service.name)));
    expect(backends).toEqual(['cdn-cache']);
    expect(named('Service', 'cdn-cache').spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
    expect(named('Service', 'cdn-cache-purge').spec).toMatchObject({ clusterIP: 'None', ports: [{ name: 'purge', port: 8081, targetPort: 'purge' }] });
  });

  it('runs nginx with the tier configuration: proxy_cache on the signed URL and slice, one fetch at a time, the njs purge', () => {
    const d = named('Deployment', 'cdn-cache');
    const [c] = d.spec.template.spec.containers;
    expect(c.image).toMatch(/^nginx:1\.\d+\.\d+$/);
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(d.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    const conf = named('ConfigMap', 'cdn-cache').data['nginx.conf'] as string;
    for (const directive of [
      'proxy_cache cdn;',
      'proxy_cache_key $request_uri$slice_range$cdn_variant;',
      'slice 1m;',
      'proxy_cache_lock on;',
      'proxy_cache_revalidate on;',
      'proxy_set_header X-Cache-Key $request_uri$slice_range$cdn_variant;',
      // format=auto: the Accept class is in the key (which the edge is told and purges) instead of Vary's variants.
      'map $arg_format $cdn_variant {',
      'proxy_ignore_headers Vary;',
      'server link-signing:80;',
      'js_content purge.purge;',
      'listen 8080;',
      'listen 8081;',
    ])
      expect(conf).toContain(directive);
    // What an answer may be kept is the edge's Cache-Control alone (Vary alone is not followed: the key has it).
    expect(conf).not.toMatch(/^\s*(proxy_cache_valid|proxy_cache_use_stale)\b/m);
    expect(conf.match(/^\s*proxy_ignore_headers\b.*$/gm)?.map((l) => l.trim())).toEqual(['proxy_ignore_headers Vary;']);
    expect(named('ConfigMap', 'cdn-cache').data['purge.js']).toContain('fs.unlinkSync');
  });

  it('gives link-signing the purge address and both proxies in front of it', () => {
    const [c] = named('Deployment', 'link-signing').spec.template.spec.containers;
    const env = Object.fromEntries(c.env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));
    expect(env.CDN_TIER_PURGE_URLS).toBe('http://cdn-cache-purge:8081/purge');
    expect(env.TRUST_PROXY).toBe('2');
  });

  it('admits the ingress controller to the tier and not to the edge; the tier reaches the edge alone; only link-signing purges', () => {
    expect(admitted(INGRESS, 'cdn-cache', 8080)).toBe(true);
    expect(admitted(INGRESS, 'link-signing', 8080)).toBe(false);
    expect(admitted(INGRESS, 'cdn-cache', 8081)).toBe(false);
    expect(admitted(pod('cdn-cache'), 'link-signing', 8080)).toBe(true);
    for (const other of ['metadata', 'auth', 'gateway', 'minio', 'nats']) {
      const port = other === 'minio' ? 9000 : other === 'nats' ? 4222 : 8080;
      expect([other, admitted(pod('cdn-cache'), other, port)]).toEqual([other, false]);
    }
    expect(admitted(pod('link-signing'), 'cdn-cache', 8081)).toBe(true);
    for (const other of ['gateway', 'metadata', 'upload']) expect([other, admitted(pod(other), 'cdn-cache', 8081)]).toEqual([other, false]);
  });

  it("nginx accepts the ConfigMap's configuration (Debian's nginx with njs, the cluster names swapped for local paths)", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cdn-cache-conf-'));
    try {
      chmodSync(dir, 0o755);
      for (const d of ['cache', 'tmp']) mkdirSync(path.join(dir, d));
      const conf = (named('ConfigMap', 'cdn-cache').data['nginx.conf'] as string)
        .replaceAll('/etc/nginx/cdn/purge.js', CDN_CACHE_PURGE_JS)
        .replaceAll('/var/cache/nginx/cdn', path.join(dir, 'cache'))
        .replace(/pid \/tmp\//, `pid ${dir}/tmp/`)
        .replace(/_temp_path \/tmp\//g, `_temp_path ${dir}/tmp/`)
        .replace('server link-signing:80;', 'server 127.0.0.1:9;')
        .replace(/listen (\d+);/g, (_m, p: string) => `listen 127.0.0.1:${Number(p) + 30000};`);
      writeFileSync(path.join(dir, 'nginx.conf'), conf);
      const out = execFileSync('/usr/sbin/nginx', ['-t', '-p', dir, '-e', 'stderr', '-c', path.join(dir, 'nginx.conf')], { encoding: 'utf8', stdio: 'pipe' });
      expect(out).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
