import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Router } from 'express';
import { notFound } from '@dam/errors';
import { createLogger } from '@dam/logging';
import { sampleValue } from '@dam/metrics';
import { createHttpApp, finishApp, isLoopbackAddress, setMetricsRoute } from '../src';

const logger = createLogger({ service: 'http-test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

async function withServer(fn: (base: string) => Promise<void>, metricsPublic = false) {
  const app = createHttpApp({ logger, metricsPublic, trustProxy: ['loopback'] });
  const router = Router();
  router.get('/api/v1/assets/:id/data', (req, res) => {
    res.json({ id: req.params.id });
  });
  router.get('/api/v1/assets/:id/missing', () => {
    throw notFound('ASSET_NOT_FOUND', 'No such asset');
  });
  app.use(router);
  app.use('/proxied', (_req, res) => {
    setMetricsRoute(res, '/proxied/{id}');
    res.status(502).end();
  });
  finishApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.close();
  }
}

const scrape = async (base: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${base}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
};
const duration = (method: string, route: string, status: string) => ({ method, route, status, service: 'http-test' });

describe('GET /metrics and the request histogram', () => {
  it('counts requests under the route pattern, never the raw URL', async () => {
    await withServer(async (base) => {
      const before = sampleValue((await scrape(base)).body, 'http_request_duration_seconds_count', duration('GET', '/api/v1/assets/:id/data', '200')) ?? 0;
      expect((await fetch(`${base}/api/v1/assets/abc123/data`)).status).toBe(200);
      expect((await fetch(`${base}/api/v1/assets/zzz999/data`)).status).toBe(200);
      expect((await fetch(`${base}/api/v1/assets/abc123/missing`)).status).toBe(404);
      expect((await fetch(`${base}/no/such/path/42`)).status).toBe(404);
      expect((await fetch(`${base}/proxied/77`)).status).toBe(502);
      await fetch(`${base}/healthz`);
      await fetch(`${base}/readyz`);

      const { status, type, body } = await scrape(base);
      expect(status).toBe(200);
      expect(type).toMatch(/^text\/plain/);
      expect(sampleValue(body, 'http_request_duration_seconds_count', duration('GET', '/api/v1/assets/:id/data', '200'))).toBe(before + 2);
      expect(sampleValue(body, 'http_request_duration_seconds_count', duration('GET', '/api/v1/assets/:id/missing', '404'))).toBe(1);
      expect(sampleValue(body, 'http_request_duration_seconds_count', duration('GET', 'unmatched', '404'))).toBe(1);
      expect(sampleValue(body, 'http_request_duration_seconds_count', duration('GET', '/proxied/{id}', '502'))).toBe(1);
      expect(body).not.toContain('abc123');
      expect(body).not.toContain('/no/such');
      expect(body).not.toMatch(/route="\/(healthz|readyz|metrics)"/);
      // Default process metrics carry the service label taken from the logger.
      expect(sampleValue(body, 'process_resident_memory_bytes', { service: 'http-test' })).toBeGreaterThan(0);
    });
  });

  it('refuses a caller that is not on loopback with the 404 of an unknown route', async () => {
    await withServer(async (base) => {
      // TRUST_PROXY=loopback: a forwarded request from a local reverse proxy has the client's address.
      const refused = await scrape(base, { 'x-forwarded-for': '203.0.113.7' });
      expect(refused.status).toBe(404);
      expect(JSON.parse(refused.body)).toEqual({ error: { code: 'ROUTE_NOT_FOUND', message: 'No route for GET /metrics' } });
      expect((await scrape(base)).status).toBe(200);
    });
  });

  it('serves every caller when metrics are public', async () => {
    await withServer(async (base) => {
      expect((await scrape(base, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(200);
    }, true);
  });

  it('knows loopback addresses', () => {
    for (const ip of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(ip)).toBe(true);
    for (const ip of ['10.0.0.1', '203.0.113.7', '::ffff:10.0.0.1', '::2', '', undefined]) expect(isLoopbackAddress(ip)).toBe(false);
  });
});
