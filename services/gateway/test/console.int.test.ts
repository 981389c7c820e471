import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '@dam/logging';
import { freePort, serviceIdentities } from '@dam/testing';
import { createGatewayApp } from '../src/app';

/** The gateway's /console/: static files of a built console (a fixture folder here), its CSP and config.json. */
const UPLOAD = 'http://upload.example.test:8181';
const CDN = 'https://cdn.example.test';

interface Gateway {
  url: string;
  stop(): Promise<void>;
}

async function startGateway(dir: string): Promise<Gateway> {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const gateway = createGatewayApp({
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
    jwtSecret: 'gw-console-test-jwt-secret-0123456789',
    signer: serviceIdentities().signer('gateway'),
    upstreams: { auth: dead, metadata: dead, search: dead, 'link-signing': dead, webhook: dead },
    limits: { perPrincipal: { perMinute: 60, burst: 1 } },
    console: { dir, publicUploadUrl: `${UPLOAD}/`, publicCdnUrl: CDN },
  });
  const server: Server = http.createServer(gateway.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async stop() {
      gateway.close();
      await new Promise((r) => server.close(r));
    },
  };
}

const INDEX = '<!doctype html><html><head><script type="module" src="/console/static/index-Ab12Cd.js"></script></head><body><div id="app"></div></body></html>';

let root: string;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'dam-console-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function makeDist(name: string): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'static'), { recursive: true });
  writeFileSync(path.join(dir, 'index.html'), INDEX);
  writeFileSync(path.join(dir, 'static', 'index-Ab12Cd.js'), 'console.log("app");');
  writeFileSync(path.join(dir, 'picker.js'), 'var DamPicker={};');
  writeFileSync(path.join(dir, 'picker.css'), '.dam-picker{}');
  writeFileSync(path.join(root, 'outside.txt'), 'not to be served');
  return dir;
}

const errorCode = async (res: Response): Promise<string> => ((await res.json()) as { error: { code: string } }).error.code;

describe('a built console', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway(makeDist('dist'));
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('serves index.html with a strict Content-Security-Policy naming {upload} and {cdn}, never cached', async () => {
    const res = await fetch(`${gw.url}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toBe(INDEX);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = Object.fromEntries(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([k, ...v]) => [k, v]),
    );
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['style-src']).toEqual(["'self'"]);
    expect(directives['connect-src']).toEqual(["'self'", UPLOAD, CDN]);
    expect(directives['img-src']).toEqual(expect.arrayContaining(["'self'", CDN]));
    expect(directives['media-src']).toEqual(expect.arrayContaining(["'self'", CDN]));
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    expect(csp).not.toMatch(/unsafe-eval|unsafe-inline|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('answers HEAD like GET, without a body', async () => {
    const res = await fetch(`${gw.url}/console/`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(INDEX)));
  });

  it('caches hashed files for a year and revalidates them by ETag', async () => {
    const res = await fetch(`${gw.url}/console/static/index-Ab12Cd.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = res.headers.get('etag') as string;
    expect(etag).toBeTruthy();
    // node:http, not fetch: fetch adds `Cache-Control: no-cache` to a conditional request, which forbids a 304.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      http
        .get(`${gw.url}/console/static/index-Ab12Cd.js`, { headers: { 'if-none-match': etag } }, (r) => {
          r.resume();
          resolve(r.statusCode);
        })
        .on('error', reject);
    });
    expect(status).toBe(304);
  });

  it('answers the app for its own routes (SPA fallback) and 404 for missing files', async () => {
    for (const route of ['/console/jobs', '/console/assets/0123456789abcdef0123456789abcdef', '/console/deep/er/route']) {
      const res = await fetch(`${gw.url}${route}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toBe(INDEX);
    }
    const missing = await fetch(`${gw.url}/console/static/gone-Zz99.js`);
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe('NOT_FOUND');
  });

  it('never serves a file outside the build', async () => {
    for (const p of ['/console/..%2foutside.txt', '/console/%2e%2e/outside.txt', '/console/static/..%2f..%2foutside.txt', '/console/%E0%A4%A']) {
      const res = await fetch(`${gw.url}${p}`);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('not to be served');
    }
  });

  it('serves picker.js and picker.css to other origins', async () => {
    for (const name of ['picker.js', 'picker.css']) {
      const res = await fetch(`${gw.url}/console/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('cache-control')).toBe('no-cache');
    }
    const app = await fetch(`${gw.url}/console/static/index-Ab12Cd.js`);
    expect(app.headers.get('cross-origin-resource-policy')).toBe('same-origin');
  });

  it('answers config.json with the public {upload} and {cdn}, to any origin', async () => {
    const res = await fetch(`${gw.url}/console/config.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toEqual({ upload: UPLOAD, cdn: CDN });
  });

  it('redirects /console to /console/, keeping the query', async () => {
    const res = await fetch(`${gw.url}/console?next=jobs`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/console/?next=jobs');
  });

  it('leaves other paths and methods to the API', async () => {
    const post = await fetch(`${gw.url}/console/`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(await errorCode(post)).toBe('ROUTE_NOT_FOUND');
    const api = await fetch(`${gw.url}/api/v1/users`);
    expect(api.status).toBe(401);
    expect(api.headers.get('content-security-policy')).toBeNull();
  });
});

describe('a console that is not built', () => {
  it('answers 503 CONSOLE_NOT_BUILT (config.json still works), then serves it once built, without a restart', async () => {
    const dir = path.join(root, 'later');
    const gw = await startGateway(dir);
    try {
      for (const p of ['/console/', '/console/picker.js', '/console/jobs']) {
        const res = await fetch(`${gw.url}${p}`);
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('CONSOLE_NOT_BUILT');
        expect(body.error.message).toMatch(/build/);
      }
      expect((await fetch(`${gw.url}/console/config.json`)).status).toBe(200);
      makeDist('later');
      const res = await fetch(`${gw.url}/console/`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(INDEX);
    } finally {
      await gw.stop();
    }
  });
});
