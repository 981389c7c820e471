import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { notFound, rangeNotSatisfiable } from '@dam/errors';
import { createLogger } from '@dam/logging';
import { createHttpApp, finishApp, parsed, pathId, validate, type CheckState } from '../src';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

async function withServer(fn: (base: string) => Promise<void>) {
  const app = createHttpApp({ logger, readiness: async () => ({ db: true }) });
  const schemas = {
    params: z.object({ id: z.string().length(3) }),
    query: z.object({ n: z.coerce.number().int().optional() }),
    body: z.object({ title: z.string() }),
  };
  app.post('/things/:id', validate(schemas), (req, res) => {
    const { params, query, body } = parsed(schemas, req, res);
    res.json({ id: params.id, n: query.n ?? null, title: body.title });
  });
  const idSchemas = {
    params: z.object({
      id: pathId(z.string().regex(/^[0-9a-f]{4}$/), () => notFound('THING_NOT_FOUND', 'No such thing')),
      page: z.coerce.number().int().min(1),
    }),
    body: z.object({ title: z.string() }),
  };
  app.post('/ids/:id/:page', validate(idSchemas), (req, res) => {
    res.json(parsed(idSchemas, req, res).params);
  });
  app.get('/missing', () => {
    throw notFound('THING_NOT_FOUND', 'No such thing');
  });
  app.get('/file', (_req, res) => {
    res.set({ 'Content-Type': 'image/png', ETag: '"abc"', 'Content-Disposition': 'attachment; filename="a.png"' });
    throw rangeNotSatisfiable(10);
  });
  app.get('/boom', async () => {
    throw new Error('kaboom');
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

describe('http app', () => {
  it('answers health and readiness', async () => {
    await withServer(async (base) => {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok', checks: { db: true } });
    });
  });

  it('answers 200 "degraded" when only degraded checks fail, naming them false; 503 when a deciding check fails', async () => {
    const states: Record<string, CheckState> = {};
    const app = finishApp(createHttpApp({ logger, readiness: async () => ({ ...states }) }), logger);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
      return { status: res.status, body: (await res.json()) as unknown };
    };
    try {
      Object.assign(states, { postgres: true, nats: 'degraded' });
      expect(await readyz()).toEqual({ status: 200, body: { status: 'degraded', checks: { postgres: true, nats: false } } });
      Object.assign(states, { postgres: false });
      expect(await readyz()).toEqual({ status: 503, body: { status: 'unavailable', checks: { postgres: false, nats: false } } });
      Object.assign(states, { postgres: true, nats: true });
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ok', checks: { postgres: true, nats: true } } });
    } finally {
      server.close();
    }
  });

  it('validates params, query and body together', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/things/toolong?n=x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; details: { path: string }[] } };
      expect(body.error.code).toBe('VALIDATION_FAILED');
      expect(body.error.details.map((d) => d.path).sort()).toEqual(['params.id', 'query.n', 'title']);
      const ok = await fetch(`${base}/things/abc?n=2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"t"}' });
      expect(await ok.json()).toEqual({ id: 'abc', n: 2, title: 't' });
    });
  });

  it("answers a path id of no resource's form with that resource's 404, before any other problem (CONTRACT §16)", async () => {
    await withServer(async (base) => {
      const post = (path: string, body: unknown) =>
        fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      // Before: 400 VALIDATION_FAILED naming params.id.
      for (const path of ['/ids/zzzz/1', '/ids/abcde/1', '/ids/zzzz/0']) {
        const res = await post(path, {});
        expect({ path, status: res.status, body: await res.json() }).toEqual({
          path,
          status: 404,
          body: { error: { code: 'THING_NOT_FOUND', message: 'No such thing' } },
        });
      }
      // Other parameters stay validation: a bad page of a well-formed id is 400.
      const badPage = await post('/ids/abcd/0', { title: 't' });
      expect(badPage.status).toBe(400);
      expect(((await badPage.json()) as { error: { details: { path: string }[] } }).error.details).toEqual([expect.objectContaining({ path: 'params.page' })]);
      expect(await (await post('/ids/abcd/2', { title: 't' })).json()).toEqual({ id: 'abcd', page: 2 });
      // A parameter the router cannot even decode names nothing either (400 BAD_REQUEST "Failed to decode param" before).
      for (const path of ['/ids/%FF/1', '/ids/%/1', '/ids/abcd/%E9']) {
        const res = await post(path, { title: 't' });
        expect({ path, status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code }).toEqual({
          path,
          status: 404,
          code: 'NOT_FOUND',
        });
      }
    });
  });

  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/things/abc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":' });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_JSON');
    });
  });

  it('answers an error after a route set download headers with a plain JSON error', async () => {
    await withServer(async (base) => {
      const res = await fetch(`${base}/file`);
      expect(res.status).toBe(416);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('etag')).not.toBe('"abc"');
      expect(res.headers.get('content-disposition')).toBeNull();
      expect(res.headers.get('content-range')).toBe('bytes */10');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RANGE_NOT_SATISFIABLE');
    });
  });

  it('maps domain errors, unknown routes and unexpected errors', async () => {
    await withServer(async (base) => {
      const missing = await fetch(`${base}/missing`);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ error: { code: 'THING_NOT_FOUND', message: 'No such thing' } });
      expect((await fetch(`${base}/nowhere`)).status).toBe(404);
      const boom = await fetch(`${base}/boom`);
      expect(boom.status).toBe(500);
      expect(((await boom.json()) as { error: { error_id: string } }).error.error_id).toBeTruthy();
      expect(boom.headers.get('x-request-id')).toBeTruthy();
    });
  });
});
