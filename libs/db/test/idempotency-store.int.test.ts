import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createHttpApp, finishApp, idempotent } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createDatabase, scaled } from '@dam/testing';
import { createPool, IDEMPOTENCY_MIGRATION, migrate, pgIdempotencyStore, type Pool } from '../src';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
const response = { fingerprint: 'f1', status: 201, contentType: 'application/json', body: Buffer.from('{"id":1}').toString('base64') };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * CONTRACT §13's kept responses in PostgreSQL, as the gateway and upload keep them: two pools stand for two replicas
 * of a service on one database.
 */
describe('pgIdempotencyStore', () => {
  let url: string;
  const pools: Pool[] = [];
  const pool = () => {
    const p = createPool(url);
    pools.push(p);
    return p;
  };
  const servers: Array<{ close(): void }> = [];

  beforeAll(async () => {
    url = await createDatabase('idempotency');
    const p = pool();
    expect(await migrate(p, [IDEMPOTENCY_MIGRATION])).toEqual(['001_idempotency_keys.sql']);
    expect(await migrate(p, [IDEMPOTENCY_MIGRATION])).toEqual([]);
  });
  afterAll(async () => {
    for (const s of servers) s.close();
    await Promise.all(pools.map((p) => p.end()));
  });

  /** A replica: an app whose POST /things and /others run under the key (scope g1:u1), counting runs in `runs`. */
  async function replica(store: ReturnType<typeof pgIdempotencyStore>, runs: { n: number }, workMs = 0): Promise<string> {
    const app = createHttpApp({ logger });
    for (const route of ['/things', '/others']) {
      app.post(route, async (req, res) => {
        await idempotent(store, 'g1:u1', req, res, async () => {
          const run = ++runs.n;
          if (workMs > 0) await sleep(workMs);
          res.status(201).json({ run, got: req.body as unknown });
        });
      });
    }
    finishApp(app, logger);
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const post = async (base: string, path: string, key: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as unknown };
  };

  it('replays the first answer on any replica, and refuses the key with another body (422) or another path (422)', async () => {
    const runs = { n: 0 };
    const [a, b] = [await replica(pgIdempotencyStore(pool()), runs), await replica(pgIdempotencyStore(pool()), runs)];
    const first = await post(a, '/things', 'replay', { name: 'x' });
    expect(first).toEqual({ status: 201, replayed: null, body: { run: 1, got: { name: 'x' } } });
    expect(await post(b, '/things', 'replay', { name: 'x' })).toEqual({ ...first, replayed: 'true' });
    expect(await post(a, '/things', 'replay', { name: 'y' })).toMatchObject({ status: 422, body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } } });
    expect(await post(b, '/others', 'replay', { name: 'x' })).toMatchObject({ status: 422, body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } } });
    expect(runs.n).toBe(1);
  });

  it('runs one of many concurrent requests with the same key on two replicas; the others answer 409 while it runs', async () => {
    const runs = { n: 0 };
    const work = scaled(500);
    const [a, b] = [await replica(pgIdempotencyStore(pool()), runs, work), await replica(pgIdempotencyStore(pool()), runs, work)];
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(i % 2 ? a : b, '/things', 'concurrent', { n: 1 })));
    expect(runs.n).toBe(1);
    expect(answers.filter((r) => r.status === 201 && r.replayed === null)).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 201)) expect(r).toMatchObject({ status: 409, body: { error: { code: 'IDEMPOTENCY_IN_FLIGHT' } } });
    // Once it has finished, a repeat is its answer.
    expect(await post(a, '/things', 'concurrent', { n: 1 })).toMatchObject({ status: 201, replayed: 'true', body: { run: 1 } });
  });

  it('gives a key to exactly one of many concurrent claims, keeps its answer, frees it again after a release', async () => {
    const [one, two] = [pgIdempotencyStore(pool()), pgIdempotencyStore(pool())];
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).claim('k1')));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.kind === 'running')).toHaveLength(9);
    const won = claims.find((c) => c.kind === 'claimed') as { kind: 'claimed'; token: number };
    await one.keep('k1', won.token, response);
    expect(await two.claim('k1')).toEqual({ kind: 'done', response });

    const second = (await one.claim('k2')) as { kind: 'claimed'; token: number };
    expect(second.kind).toBe('claimed');
    await two.release('k2', second.token);
    expect((await two.claim('k2')).kind).toBe('claimed');
  });

  it('takes over a key whose request stalled longer than the running limit (its process died), and the stale one cannot write', async () => {
    // The second claim must come within the running limit: scaled for a loaded machine.
    const store = pgIdempotencyStore(pool(), { runningTtlMs: scaled(1000) });
    const first = (await store.claim('k3')) as { kind: 'claimed'; token: number };
    expect((await store.claim('k3')).kind).toBe('running');
    await sleep(scaled(1000) + 100);
    const next = (await store.claim('k3')) as { kind: 'claimed'; token: number };
    expect(next.kind).toBe('claimed');
    expect(next.token).toBeGreaterThan(first.token);
    await expect(store.keep('k3', first.token, response)).rejects.toThrow(/taken over/);
    await store.release('k3', first.token); // a stale release leaves the new claim alone
    await store.keep('k3', next.token, response);
    expect(await store.claim('k3')).toEqual({ kind: 'done', response });
  });

  it('forgets a kept answer once it expired (the key runs anew), and sweep removes the expired rows', async () => {
    const ttlMs = scaled(1000);
    const store = pgIdempotencyStore(pool(), { ttlMs });
    const count = async () => Number((await pools[0]!.query<{ n: string }>("SELECT count(*) AS n FROM idempotency_keys WHERE key LIKE 'exp%'")).rows[0]?.n);
    for (const key of ['exp1', 'exp2', 'exp3']) {
      const claim = (await store.claim(key)) as { kind: 'claimed'; token: number };
      await store.keep(key, claim.token, response);
    }
    expect(await store.claim('exp1')).toEqual({ kind: 'done', response });
    await sleep(ttlMs + 100);
    expect((await store.claim('exp1')).kind).toBe('claimed');
    expect(await count()).toBe(3);
    // exp1 is claimed again (not expired): the other two go.
    expect(await store.sweep()).toBe(2);
    expect(await count()).toBe(1);
  });

  it('fails a claim when the database cannot be reached (the middleware answers 503 before anything ran)', async () => {
    const gone = createPool('postgres://postgres@127.0.0.1:1/none', { connectionTimeoutMillis: 1000 });
    pools.push(gone);
    await expect(pgIdempotencyStore(gone).claim('k4')).rejects.toThrow();
  });
});
