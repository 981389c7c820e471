import http, { type Server } from 'node:http';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { signJwt } from '@dam/auth-tokens';
import { connectNats, IDEMPOTENCY_BUCKET, kvBucketMaxBytes } from '@dam/events';
import { listen, scaled, serviceIdentities, startNats, startServiceProcess, type ServiceProcess, type TestNats } from '@dam/testing';

jest.setTimeout(scaled(60_000));

/**
 * Production form D6 (issue 31), its left-overs: the gateway sizes its IDEMPOTENCY bucket from NATS_STREAMS_MAX_BYTES
 * at start, and a full bucket is a dependency that is unavailable: 503 IDEMPOTENCY_UNAVAILABLE with Retry-After
 * before the request runs, logged, never a 500 or a hang; requests without a key go on.
 */
describe('the gateway with a full IDEMPOTENCY bucket', () => {
  const JWT_SECRET = 'gw-kv-test-jwt-secret-0123456789';
  const BUDGET = 1024 * 1024;
  let nats: TestNats;
  let admin: Awaited<ReturnType<typeof connectNats>>;
  let upstream: Server;
  let gateway: ServiceProcess;
  const forwarded: string[] = [];

  beforeAll(async () => {
    nats = await startNats();
    admin = await connectNats(nats.url, 'gateway-kv-test', nats.seed('admin'));
    // Auth and metadata in one: healthy, no user status (the token's claims stand), every POST answered.
    upstream = http.createServer((req, res) => {
      if (req.url?.startsWith('/healthz')) res.end('{"status":"ok"}');
      else if (req.method === 'POST') {
        forwarded.push(String(req.url));
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"updated":true}'));
      } else res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"code":"UNAVAILABLE","message":"stub"}}');
    });
    const url = await listen(upstream);
    gateway = await startServiceProcess('gateway', {
      ...serviceIdentities().env('gateway'),
      ...nats.env('gateway'),
      NATS_STREAMS_MAX_BYTES: String(BUDGET),
      JWT_SECRET,
      AUTH_URL: url,
      METADATA_URL: url,
      OTEL_SDK_DISABLED: 'true',
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await new Promise((r) => upstream?.close(r));
    await admin?.drain();
    await nats?.stop();
  });

  it("reports its own worker in /readyz beside the upstreams' health (the usage flush, run by runService)", async () => {
    const res = await fetch(`${gateway.url}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { checks: Record<string, boolean> }).checks).toEqual({ 'poller:usage-flush': true, auth: true, metadata: true });
  });

  it('creates the bucket with its share of the budget, then answers 503 with Retry-After while it is full', async () => {
    const jsm = await jetstreamManager(admin);
    const limit = kvBucketMaxBytes(BUDGET).IDEMPOTENCY;
    expect((await jsm.streams.info(`KV_${IDEMPOTENCY_BUCKET}`)).config.max_bytes).toBe(limit);

    // Filled to its last bytes (values of 1000, then 1 byte: smaller than any claim) by other requests' responses
    // (a KV put is a publish on the bucket's subject).
    const js = jetstream(admin);
    let puts = 0;
    for (const size of [1000, 1]) {
      for (let refused = false; !refused;) {
        if (puts > 2 * limit) throw new Error(`${puts} puts and no refusal`);
        refused = await js.publish(`$KV.${IDEMPOTENCY_BUCKET}.other.${puts++}`, 'x'.repeat(size)).then(
          () => false,
          (error: unknown) => /maximum bytes exceeded/.test(String(error)),
        );
      }
    }

    const { token } = signJwt({ sub: 5, gid: 7, role: 1 }, JWT_SECRET, 600);
    const update = (headers: Record<string, string> = {}) =>
      fetch(`${gateway.url}/api/v1/assets/a1/data/update`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ data: { a: 1 }, mode: 'APPEND' }),
        signal: AbortSignal.timeout(scaled(10_000)),
      });
    const refused = await update({ 'idempotency-key': 'full-1' });
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect([refused.status, refused.headers.get('retry-after'), body.error.code]).toEqual([503, '5', 'IDEMPOTENCY_UNAVAILABLE']);
    expect(body.error.message).toMatch(/maximum bytes exceeded/);
    expect(forwarded).toEqual([]);
    await gateway.waitForLog(/"bucket":"IDEMPOTENCY".*KV bucket full/);

    // Without a key nothing is kept: the request goes through.
    const plain = await update();
    expect([plain.status, forwarded]).toEqual([200, ['/api/v1/assets/a1/data/update']]);
  });
});
