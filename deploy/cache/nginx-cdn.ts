import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The cache tier in front of `{cdn}`: nginx with proxy_cache, slice and a purge endpoint (issue 33). */
export const CDN_CACHE_TEMPLATE = path.join(__dirname, 'nginx-cdn.conf.template');
export const CDN_CACHE_PURGE_JS = path.join(__dirname, 'purge.js');

export interface CdnCacheConfig {
  /** link-signing as nginx reaches it: `host:port`. */
  upstream: string;
  /** `port` or `address:port` of `{cdn}` as clients reach it. */
  listen: string;
  /** `port` or `address:port` of the purge endpoint (link-signing's CDN_TIER_PURGE_URLS). */
  purgeListen: string;
  /** Where the cached files are (proxy_cache_path). */
  cacheDir: string;
  /** pid file and temporary files. */
  runDir: string;
  /** purge.js as nginx reads it (default: this folder's). */
  purgeJs?: string;
  /** Who may purge: nginx `allow` addresses (default 127.0.0.1 only); `all` when the network decides (k8s NetworkPolicy). */
  purgeAllow?: readonly string[] | 'all';
  errorLog?: string;
  /** Where ngx_http_js_module.so is (Debian's and the official image's modules path by default). */
  modules?: string;
  workers?: number | 'auto';
  maxSize?: string;
  keysZone?: string;
  inactive?: string;
}

/** The nginx configuration: the template with every `${NAME}` replaced (an unknown name is an error). */
export function renderCdnCacheConfig(c: CdnCacheConfig): string {
  const allow = c.purgeAllow ?? ['127.0.0.1'];
  const values: Record<string, string> = {
    MODULES: c.modules ?? '/usr/lib/nginx/modules',
    WORKERS: String(c.workers ?? 'auto'),
    RUN_DIR: c.runDir,
    ERROR_LOG: c.errorLog ?? 'stderr',
    CACHE_DIR: c.cacheDir,
    KEYS_ZONE: c.keysZone ?? '32m',
    MAX_SIZE: c.maxSize ?? '10g',
    INACTIVE: c.inactive ?? '1d',
    PURGE_JS: c.purgeJs ?? CDN_CACHE_PURGE_JS,
    UPSTREAM: c.upstream,
    LISTEN: c.listen,
    PURGE_LISTEN: c.purgeListen,
    PURGE_ALLOW: allow === 'all' ? 'allow all;' : `${allow.map((a) => `allow ${a};`).join(' ')} deny all;`,
  };
  return readFileSync(CDN_CACHE_TEMPLATE, 'utf8').replace(/\$\{([A-Z_]+)\}/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`nginx-cdn.conf.template: no value for \${${name}}`);
    return v;
  });
}

export interface RunningCdnCache {
  url: string;
  purgeUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Debian's nginx (`/usr/sbin/nginx`, with libnginx-mod-http-js) as a child process in the foreground, its config,
 * cache and temporary files under `dir`. Resolves when `/healthz` answers.
 */
export async function startCdnCache(opts: { upstream: string; port: number; purgePort: number; dir: string; nginx?: string }): Promise<RunningCdnCache> {
  const runDir = path.join(opts.dir, 'run');
  const cacheDir = path.join(opts.dir, 'cache');
  mkdirSync(runDir, { recursive: true });
  mkdirSync(cacheDir, { recursive: true });
  // Started as root, nginx's workers run as nobody: they must get through the folder (a mkdtemp one is 0700).
  chmodSync(opts.dir, 0o755);
  const conf = path.join(opts.dir, 'nginx.conf');
  writeFileSync(
    conf,
    renderCdnCacheConfig({
      upstream: opts.upstream,
      listen: `127.0.0.1:${opts.port}`,
      purgeListen: `127.0.0.1:${opts.purgePort}`,
      cacheDir,
      runDir,
      workers: 2,
      errorLog: path.join(opts.dir, 'error.log'),
      maxSize: '2g',
    }),
  );
  const child = spawn(opts.nginx ?? '/usr/sbin/nginx', ['-p', opts.dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${opts.port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited at start: ${stderr}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 200) throw new Error(`nginx did not answer on ${url}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    purgeUrl: `http://127.0.0.1:${opts.purgePort}/purge`,
    process: child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGQUIT');
      await exited;
    },
  };
}

// `tsx deploy/cache/nginx-cdn.ts <out.conf>`: renders the configuration from env (deploy/local/up).
if (require.main === module) {
  const env = (name: string, fallback?: string): string => {
    const v = process.env[name] ?? fallback;
    if (v === undefined) throw new Error(`${name} is not set`);
    return v;
  };
  const out = process.argv[2];
  if (!out) throw new Error('usage: nginx-cdn.ts <out.conf>');
  writeFileSync(
    out,
    renderCdnCacheConfig({
      upstream: env('CDN_CACHE_UPSTREAM'),
      listen: env('CDN_CACHE_LISTEN'),
      purgeListen: env('CDN_CACHE_PURGE_LISTEN'),
      cacheDir: env('CDN_CACHE_DIR'),
      runDir: env('CDN_CACHE_RUN_DIR'),
      errorLog: env('CDN_CACHE_ERROR_LOG', 'stderr'),
      maxSize: env('CDN_CACHE_MAX_SIZE', '10g'),
    }),
  );
}
