import http, { type Server } from 'node:http';
import { signJwt } from '@dam/auth-tokens';
import { createPool } from '@dam/db';
import { createDatabase, listen, scaled, serviceIdentities, startFaultProxy, startServiceProcess, type FaultProxy, type ServiceProcess } from '@dam/testing';
import { loadGatewayConfig } from '../src/config';

jest.setTimeout(scaled(60_000));

/**
 * Issue 35: the gateway keeps Idempotency-Key responses in its own database (migrated at start), so keyed requests
 * need no NATS (it runs without any here). Its database unreachable fails keyed requests only: 503
 * IDEMPOTENCY_UNAVAILABLE with Retry-After before the request runs, never a 500 or a hang; requests without a key
 * go on, and the gateway stays ready.
 */
describe('the gateway with its Idempotency-Key table in PostgreSQL', () => {
  const JWT_SECRET = 'gw-pg-test-jwt-secret-0123456789';
  let database: string;
  let proxy: FaultProxy;
  let upstream: Server;
  let gateway: ServiceProcess;
  const forwarded: string[] = [];

  beforeAll(async () => {
    database = await createDatabase('gateway_idempotency');
    const target = new URL(database);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port) });
    const viaProxy = new URL(database);
    viaProxy.hostname = proxy.host;
    viaProxy.port = String(proxy.port);
    // Auth and metadata in one: healthy, no user status (the token's claims stand), every POST answered.
    upstream = http.createServer((req, res) => {
      if (req.url?.startsWith('/healthz')) res.end('{"status":"ok"}');
      else if (req.method === 'POST') {
        forwarded.push(String(req.url));
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(`{"updated":${forwarded.length}}`));
      } else res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"UNAVAILABLE","message":"stub"}}');
    });
    const url = await listen(upstream);
    gateway = await startServiceProcess('gateway', {
      ...serviceIdentities().env('gateway'),
      DATABASE_URL: viaProxy.toString(),
      JWT_SECRET,
      AUTH_URL: url,
      METADATA_URL: url,
      OTEL_SDK_DISABLED: 'true',
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await new Promise((r) => upstream?.close(r));
    await proxy?.stop();
  });

  const { token } = signJwt({ sub: 5, gid: 7, role: 1 }, JWT_SECRET, 600);
  const update = (headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/api/v1/assets/a1/data/update`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ data: { a: 1 }, mode: 'APPEND' }),
      signal: AbortSignal.timeout(scaled(15_000)),
    });

  it('migrates its table at start, keeps a keyed answer there and replays it, without NATS', async () => {
    const first = await update({ 'idempotency-key': 'pg-1' });
    expect([first.status, first.headers.get('idempotent-replayed'), await first.text()]).toEqual([200, null, '{"updated":1}']);
    // Kept once the answer is out: a repeat may come before (409 IDEMPOTENCY_IN_FLIGHT), so it waits for the row.
    const pool = createPool(database);
    try {
      for (let i = 0; i < 100; i++) {
        const { rows } = await pool.query<{ response: unknown }>('SELECT response FROM idempotency_keys');
        if (rows.length === 1 && rows[0]?.response) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await pool.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE response IS NOT NULL')).rows[0]).toEqual({ n: 1 });
    } finally {
      await pool.end();
    }
    const again = await update({ 'idempotency-key': 'pg-1' });
    expect([again.status, again.headers.get('idempotent-replayed'), await again.text()]).toEqual([200, 'true', '{"updated":1}']);
    expect(forwarded).toEqual(['/api/v1/assets/a1/data/update']);
  });

  it('answers a keyed request 503 with Retry-After while its database is unreachable, runs nothing, and stays ready', async () => {
    await proxy.down();
    try {
      const refused = await update({ 'idempotency-key': 'pg-2' });
      const body = (await refused.json()) as { error: { code: string } };
      expect([refused.status, refused.headers.get('retry-after'), body.error.code]).toEqual([503, '5', 'IDEMPOTENCY_UNAVAILABLE']);
      expect(forwarded).toHaveLength(1);
      // Without a key nothing is kept: the request goes through, and the gateway is still ready.
      const plain = await update();
      expect([plain.status, forwarded.length]).toEqual([200, 2]);
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    } finally {
      await proxy.pass();
    }
    // Back: the key that was refused runs now.
    expect((await update({ 'idempotency-key': 'pg-2' })).status).toBe(200);
    expect(forwarded).toHaveLength(3);
  });

  it('refuses to start in production without DATABASE_URL (replicas would each keep their own responses)', () => {
    expect(() => loadGatewayConfig({ NODE_ENV: 'production', TRUST_PROXY: '1', JWT_SECRET, ...serviceIdentities().env('gateway') })).toThrow(
      /DATABASE_URL: must be set when NODE_ENV=production/,
    );
  });
});
