import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { rateLimited } from '@dam/errors';
import { createLogger } from '@dam/logging';
import { createHttpApp, finishApp, idempotent, memoryIdempotencyStore, type IdempotencyStore, type KeptResponse } from '../src';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

/** An app whose POST /things answers what `answers` says next (a status), counting its runs. */
async function withApp(
  answers: number[],
  fn: (post: (key: string, body: unknown) => Promise<{ status: number; replayed: string | null; body: unknown }>, runs: () => number) => Promise<void>,
  store: IdempotencyStore = memoryIdempotencyStore(),
) {
  const app = createHttpApp({ logger });
  let count = 0;
  app.post('/things', async (req, res) => {
    await idempotent(store, 'g1:u1', req, res, () => {
      count++;
      const status = answers.shift() ?? 201;
      if (status === 429) throw rateLimited(1);
      if (status >= 500) throw new Error('broken');
      res.status(status).json({ run: count, got: req.body });
    });
  });
  finishApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await fn(
      async (key, body) => {
        const res = await fetch(`${base}/things`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify(body),
        });
        return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() };
      },
      () => count,
    );
  } finally {
    server.close();
  }
}

describe('idempotent (CONTRACT §13)', () => {
  it('replays the first answer, refuses the key for another body, and runs again after an answer about the moment', async () => {
    await withApp([429, 500, 201], async (post, runs) => {
      expect((await post('k', { a: 1 })).status).toBe(429);
      expect((await post('k', { a: 1 })).status).toBe(500);
      const made = await post('k', { a: 1 });
      expect(made).toEqual({ status: 201, replayed: null, body: { run: 3, got: { a: 1 } } });
      expect(await post('k', { a: 1 })).toEqual({ status: 201, replayed: 'true', body: { run: 3, got: { a: 1 } } });
      expect(await post('k', { a: 2 })).toMatchObject({ status: 422, body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } } });
      expect(runs()).toBe(3);
    });
  });

  it('has the answer kept before the client has it: a repeat sent at once is a replay, never 409 (a store across the network)', async () => {
    // As PostgreSQL: writing the answer and releasing a key take a round trip.
    const memory = memoryIdempotencyStore();
    const slow: IdempotencyStore = {
      claim: (key) => memory.claim(key),
      keep: async (...args) => {
        await new Promise((r) => setTimeout(r, 150));
        await memory.keep(...args);
      },
      release: async (...args) => {
        await new Promise((r) => setTimeout(r, 150));
        await memory.release(...args);
      },
    };
    await withApp(
      [503, 201],
      async (post, runs) => {
        // A failed run's key is free again as soon as its answer arrives: the retry runs.
        expect((await post('k', { a: 1 })).status).toBe(500);
        expect(await post('k', { a: 1 })).toEqual({ status: 201, replayed: null, body: { run: 2, got: { a: 1 } } });
        expect(await post('k', { a: 1 })).toEqual({ status: 201, replayed: 'true', body: { run: 2, got: { a: 1 } } });
        expect(runs()).toBe(2);
      },
      slow,
    );
  });

  it('keeps a final client error as the answer', async () => {
    await withApp([404], async (post, runs) => {
      expect((await post('k2', {})).status).toBe(404);
      expect(await post('k2', {})).toMatchObject({ status: 404, replayed: 'true' });
      expect(runs()).toBe(1);
    });
  });

  it('never keeps a credential: an answer marked no-store is kept without it, and a repeat says what was withheld (security review I2)', async () => {
    // What the gateway keeps in its idempotency_keys table, recorded.
    const memory = memoryIdempotencyStore();
    const kept: KeptResponse[] = [];
    const store: IdempotencyStore = { ...memory, keep: async (key, token, response) => (kept.push(response), memory.keep(key, token, response)) };
    const app = createHttpApp({ logger });
    let minted = 0;
    app.post('/api/v1/api_keys', async (req, res) => {
      await idempotent(store, 'g1:u1', req, res, () => {
        minted++;
        // As the gateway relays auth's answer: the upstream's headers given to writeHead.
        const body = JSON.stringify({ key_id: 'k-1', name: 'ci', role: 'USER', key: 'dam_live_secret-of-the-new-key' });
        res.writeHead(201, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
        res.end(body);
      });
    });
    app.post('/api/v1/users/me/uploadkey', async (req, res) => {
      await idempotent(store, 'g1:u1', req, res, () => res.setHeader('Cache-Control', 'no-store').json({ uploadkey: 'upk_secret-upload-key' }));
    });
    finishApp(app, logger);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = (path: string) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'mint-1' },
        body: '{"name":"ci","role":"USER"}',
      });
    try {
      const first = await post('/api/v1/api_keys');
      expect(first.status).toBe(201);
      expect(await first.json()).toMatchObject({ key: 'dam_live_secret-of-the-new-key' });
      await post('/api/v1/users/me/uploadkey').then((r) => r.json());
      await new Promise((r) => setTimeout(r, 50)); // kept once the answers are out
      const stored = JSON.stringify(kept.map((k) => ({ ...k, body: Buffer.from(k.body, 'base64').toString() })));
      expect(stored).not.toContain('dam_live_secret-of-the-new-key');
      expect(stored).not.toContain('upk_secret-upload-key');
      const again = await post('/api/v1/api_keys');
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('idempotent-withheld')).toBe('key');
      expect(await again.json()).toEqual({ key_id: 'k-1', name: 'ci', role: 'USER' });
      expect(minted).toBe(1);
    } finally {
      server.close();
    }
  });
});
