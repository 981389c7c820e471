import { createHash } from 'node:crypto';
import http, { type Server } from 'node:http';
import { SERVICE_TOKEN_HEADER, createServiceVerifier, parseTrustedKeys, verifyJwt, type ServiceCall } from '@dam/auth-tokens';
import { createLogger } from '@dam/logging';
import { connectNats, SUBJECT_ASSETS_CHANGED } from '@dam/events';
import { createDatabase, freePort, listen, scaled, serviceIdentities, startNats, startServiceProcess, waitFor, type ServiceProcess } from '@dam/testing';
import { assetChangeFollower } from '../src/adapters/asset-change.follower';
import { createGatewayApp, type GatewayAppDeps } from '../src/app';
import { ReadCache } from '../src/domain/read-cache';

// Starting the auth process takes seconds on a 2-core machine.
jest.setTimeout(scaled(60_000));

const JWT_SECRET = 'gw-test-jwt-secret-0123456789';
const identities = serviceIdentities();
// What the real metadata does with the gateway's token: verify it for this very request, as the audience.
const metadataVerifier = createServiceVerifier({ service: 'metadata', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) });

/** The call the upstream saw, or the reason it would have been refused. */
function verifiedCall(req: http.IncomingMessage): ServiceCall | { refused: string } {
  const token = req.headers[SERVICE_TOKEN_HEADER];
  try {
    return metadataVerifier.verify(typeof token === 'string' ? token : undefined, req.method ?? '', req.url ?? '');
  } catch (error) {
    return { refused: (error as Error).message };
  }
}
const BIG = 8 * 1024 * 1024 + 123;

/** Stand-in for metadata: echoes what reached it, and serves a large body with Range like the real one. */
function fakeMetadata(): Server {
  return http.createServer((req, res) => {
    if (req.url?.startsWith('/healthz')) {
      res.end('{"status":"ok"}');
      return;
    }
    // An internal redirect, as metadata answers when the gateway offers to stream (x-dam-accel).
    const accel = /\/content\/(thumb|gone|hung)\/download/.exec(req.url ?? '');
    if (accel && req.headers['x-dam-accel'] === 's3') {
      const range = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? '');
      const [start, end] = range ? [Number(range[1]), Number(range[2])] : [0, STORED.length - 1];
      res.writeHead(range ? 206 : 200, {
        'content-type': 'image/webp',
        etag: '"stored"',
        'content-disposition': 'inline; filename="p_thumb.webp"',
        'x-dam-accel-redirect': `${storeUrl}/${accel[1]}?X-Amz-Signature=x`,
        'x-dam-accel-length': String(end - start + 1),
        'x-seen-accel': String(req.headers['x-dam-accel-redirect'] ?? 'none'),
        ...(range ? { 'content-range': `bytes ${start}-${end}/${STORED.length}` } : {}),
      });
      res.end();
      return;
    }
    if (req.url?.includes('/content/original/download')) {
      const range = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      const end = range ? Number(range[2]) : BIG - 1;
      res.writeHead(range ? 206 : 200, {
        'content-type': 'application/octet-stream',
        'content-length': String(end - start + 1),
        etag: '"abc123"',
        'accept-ranges': 'bytes',
        'content-disposition': 'attachment; filename="big.bin"',
        ...(range ? { 'content-range': `bytes ${start}-${end}/${BIG}` } : {}),
      });
      // Written in chunks so the body is streamed, not one buffer.
      let sent = start;
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = (): void => {
        while (sent <= end) {
          const n = Math.min(chunk.length, end - sent + 1);
          sent += n;
          if (!res.write(chunk.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          call: verifiedCall(req),
        }),
      );
    });
  });
}

/** The object the fake store holds, and the store: `/thumb` with Range, anything else 404 as S3 says it. */
const STORED = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz');
let store: Server;
let storeUrl: string;
const storeRanges: Array<string | undefined> = [];

let auth: ServiceProcess;
let databaseUrl: string;
let metadata: Server;
let metadataUrl: string;
let gatewayServer: Server;
let gw: string;

async function startGateway(
  upstreamMetadata: string,
  rateLimit?: { perMinute: number; burst: number },
  extra: Partial<GatewayAppDeps> = {},
): Promise<{ server: Server; url: string }> {
  const { app } = createGatewayApp({
    ...(rateLimit ? { limits: { perPrincipal: rateLimit } } : {}),
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
    jwtSecret: JWT_SECRET,
    signer: identities.signer('gateway'),
    upstreams: { auth: auth.url, metadata: upstreamMetadata, search: upstreamMetadata, 'link-signing': upstreamMetadata, webhook: upstreamMetadata },
    upstreamTimeoutMs: 5000,
    userStatusTtlMs: 0,
    // Explicit, whatever TRUST_PROXY the test runs under: the test client is on loopback, so trusting
    // loopback would let its own X-Forwarded-For pick the address.
    trustProxy: false,
    ...extra,
  });
  const server = http.createServer(app);
  return { server, url: await listen(server) };
}

beforeAll(async () => {
  databaseUrl = await createDatabase('gateway');
  auth = await startServiceProcess('auth', {
    DATABASE_URL: databaseUrl,
    JWT_SECRET,
    ...identities.env('auth'),
    OTEL_SDK_DISABLED: 'true',
    LOG_LEVEL: 'warn',
  });
  store = http.createServer((req, res) => {
    storeRanges.push(req.headers.range);
    // An object store that accepted the request and answers nothing (hung, partitioned).
    if (req.url?.startsWith('/hung')) return;
    if (!req.url?.startsWith('/thumb')) {
      res.writeHead(404, { 'content-type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
      return;
    }
    const range = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? '');
    const body = range ? STORED.subarray(Number(range[1]), Number(range[2]) + 1) : STORED;
    res.writeHead(range ? 206 : 200, { 'content-length': String(body.length), 'x-amz-request-id': 'store' }).end(body);
  });
  storeUrl = await listen(store);
  metadata = fakeMetadata();
  metadataUrl = await listen(metadata);
  ({ server: gatewayServer, url: gw } = await startGateway(metadataUrl));
});

afterAll(async () => {
  await new Promise((r) => gatewayServer.close(r));
  await new Promise((r) => metadata.close(r));
  await new Promise((r) => store.close(r));
  await auth.stop();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
type Json = any;
/**
 * The limit tests refill a token every 10 s (6 a minute), so that a slow machine sending their requests cannot earn
 * one back mid-test; Retry-After is then the whole seconds until the next token, 1 to 10.
 */
const WITHIN_A_TOKEN = /^([1-9]|10)$/;
const json = async (res: Response): Promise<{ status: number; body: Json; headers: Headers }> => ({
  status: res.status,
  body: await res.json(),
  headers: res.headers,
});
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }).then(json);
const get = (path: string, headers: Record<string, string> = {}) => fetch(`${gw}${path}`, { headers }).then(json);

async function adminJwt(): Promise<string> {
  const res = await post('/api/v1/login', { email: 'admin@example.com', password: 'admin-password' });
  expect(res.status).toBe(200);
  return res.body.jwt as string;
}

describe('gateway in front of auth', () => {
  it('logs in through the gateway and validates the JWT (header and _jwt)', async () => {
    const jwt = await adminJwt();
    expect((await get('/api/v1/auth/validate', { authorization: `Bearer ${jwt}` })).body).toMatchObject({ valid: true, user_id: 1 });
    expect((await post(`/api/v1/auth/validate?_jwt=${jwt}`, {})).status).toBe(200);
    expect((await post('/api/v1/login', { email: 'admin@example.com', password: 'wrong-password' })).status).toBe(401);
  });

  it('no credentials → 401, bad JWT → 401, unknown route → 404, all with the contract body', async () => {
    const none = await get('/api/v1/users');
    expect(none.status).toBe(401);
    expect(none.body.error).toEqual(expect.objectContaining({ code: 'UNAUTHENTICATED', message: expect.any(String) }));
    expect((await get('/api/v1/users', { authorization: 'Bearer not.a.jwt' })).status).toBe(401);
    const unknown = await get('/api/v1/nothing-here', { authorization: `Bearer ${await adminJwt()}` });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('a CREATOR gets 403 on a MANAGE_USERS route but reads itself', async () => {
    const admin = { authorization: `Bearer ${await adminJwt()}` };
    const created = await post('/api/v1/users', { email: 'creator@example.com', password: 'password-1', role_id: 4 }, admin);
    expect(created.status).toBe(201);
    const login = await post('/api/v1/login', { email: 'creator@example.com', password: 'password-1' });
    const creator = { authorization: `Bearer ${login.body.jwt}` };
    const denied = await get('/api/v1/users', creator);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await get('/api/v1/users/me', creator)).body).toMatchObject({ email: 'creator@example.com', role_id: 4 });
  });

  it("a user's JWT stops working once the user is disabled, and follows a demotion", async () => {
    const admin = { authorization: `Bearer ${await adminJwt()}` };
    const created = await post('/api/v1/users', { email: 'manager@example.com', password: 'password-2', role_id: 2 }, admin);
    expect(created.status).toBe(201);
    const userId = created.body.user_id as number;
    const token = { authorization: `Bearer ${(await post('/api/v1/login', { email: 'manager@example.com', password: 'password-2' })).body.jwt}` };
    const patch = (body: unknown) =>
      fetch(`${gw}/api/v1/users/${userId}`, { method: 'PATCH', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify(body) });

    expect((await get('/api/v1/assets/abc/data', token)).status).toBe(200);
    expect((await patch({ role_id: 4 })).status).toBe(200);
    // Same token, now a CREATOR: reads pass the gateway (READ_OWN_ASSET), the principal says CREATOR.
    const asCreator = await get('/api/v1/assets/abc/data', token);
    expect(asCreator.body.call.principal).toMatchObject({ user_id: userId, role_id: 4, role_name: 'CREATOR' });
    expect((await patch({ disabled: true })).status).toBe(200);
    const disabled = await get('/api/v1/users/me', token);
    expect(disabled.status).toBe(403);
    expect(disabled.body.error.code).toBe('ACCOUNT_DISABLED');
  });

  it('X-Service-Api-Key works until the key is revoked', async () => {
    const admin = { authorization: `Bearer ${await adminJwt()}` };
    const key = await post('/api/v1/api_keys', { name: 'gw', role: 'MANAGER' }, admin);
    expect(key.status).toBe(201);
    const viaKey = { 'x-service-api-key': key.body.key as string };
    expect((await get('/api/v1/users/me', viaKey)).body).toMatchObject({ user_id: 1 });
    // MANAGER key: no MANAGE_USERS.
    expect((await get('/api/v1/users', viaKey)).status).toBe(403);
    expect((await fetch(`${gw}/api/v1/api_keys/${key.body.key_id}`, { method: 'DELETE', headers: admin })).status).toBe(200);
    expect((await get('/api/v1/users/me', viaKey)).status).toBe(401);
  });
});

describe('JWT_SECRET overlap rotation (issue 31): auth and the gateway restarted with a new secret and the old one as JWT_PREVIOUS_SECRET', () => {
  const ROTATED = 'gw-rotated-jwt-secret-0123456789';
  let rotatedAuth: ServiceProcess;
  let rotatedGateway: ServiceProcess;

  beforeAll(async () => {
    const rotation = { JWT_SECRET: ROTATED, JWT_PREVIOUS_SECRET: JWT_SECRET, OTEL_SDK_DISABLED: 'true', LOG_LEVEL: 'warn' };
    // Started side by side: the gateway is ready once auth, its upstream, is.
    const authPort = await freePort();
    [rotatedAuth, rotatedGateway] = await Promise.all([
      startServiceProcess('auth', { DATABASE_URL: databaseUrl, ...identities.env('auth'), ...rotation }, { port: authPort }),
      startServiceProcess('gateway', { ...identities.env('gateway'), AUTH_URL: `http://127.0.0.1:${authPort}`, METADATA_URL: metadataUrl, ...rotation }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([rotatedGateway?.stop(), rotatedAuth?.stop()]);
  });

  it('accepts a token signed before the rotation, signs new ones with the new secret; without JWT_PREVIOUS_SECRET the old token is refused', async () => {
    const old = { authorization: `Bearer ${await adminJwt()}` };
    const via = (url: string, path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers }).then(json);
    // The gateway verifies it (users/me), and so does auth (Validate JWT).
    expect([
      (await via(rotatedGateway.url, '/api/v1/users/me', old)).body.user_id,
      (await via(rotatedGateway.url, '/api/v1/auth/validate', old)).body.valid,
    ]).toEqual([1, true]);
    const login = await fetch(`${rotatedGateway.url}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password' }),
    }).then(json);
    expect(verifyJwt(login.body.jwt as string, ROTATED)).toMatchObject({ sub: 1 });
    expect(() => verifyJwt(login.body.jwt as string, JWT_SECRET)).toThrow(expect.objectContaining({ code: 'INVALID_TOKEN' }));
    // What a rotation did before JWT_PREVIOUS_SECRET existed: every token issued before is refused at once.
    const unrotated = await startGateway(metadataUrl, undefined, { jwtSecret: ROTATED });
    try {
      const refused = await via(unrotated.url, '/api/v1/users/me', old);
      expect([refused.status, refused.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
    } finally {
      await new Promise((r) => unrotated.server.close(r));
    }
  });
});

describe('gateway proxying', () => {
  it('replaces a forged service token with its own for this request, drops credentials, forwards ids and bodies', async () => {
    const jwt = await adminJwt();
    const forged = { [SERVICE_TOKEN_HEADER]: 'forged.token.value' };
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const res = await post(
      '/api/v1/assets/abc/data/update?async=1',
      { data: { a: 1 }, mode: 'APPEND' },
      {
        authorization: `Bearer ${jwt}`,
        traceparent,
        'x-request-id': 'req-123',
        ...forged,
      },
    );
    expect(res.status).toBe(200);
    expect(res.body.url).toBe('/api/v1/assets/abc/data/update?async=1');
    expect(res.body.call.caller).toBe('gateway');
    expect(res.body.call.principal).toMatchObject({ user_id: 1, group_id: 1, role_id: 1, via: 'jwt' });
    expect(res.body.call.clientAddress).toBe('127.0.0.1');
    expect(res.body.headers.authorization).toBeUndefined();
    expect(res.body.headers.traceparent).toBe(traceparent);
    expect(res.body.headers['x-request-id']).toBe('req-123');
    expect(JSON.parse(res.body.body)).toEqual({ data: { a: 1 }, mode: 'APPEND' });
  });

  it('refuses a path the forwarding would rewrite (backslashes, dot segments): 400, nothing forwarded (security review F3)', async () => {
    const jwt = await adminJwt();
    // Sent raw: fetch would rewrite them itself, as the gateway's URL parser did when forwarding.
    const raw = (path: string) =>
      new Promise<{ status: number; body: Json }>((resolve, reject) => {
        const { port } = new URL(gw);
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path, headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Json }));
          },
        );
        req.on('error', reject);
        req.end('{"name":"x","schema":{}}');
      });
    for (const path of [
      '/api/v1/assets/a\\..\\..\\schemas',
      '/api/v1/assets/a/..\\..\\schemas',
      '/api/v1/assets/%2e%2e/schemas',
      '/api/v1/assets/a\\data/update',
    ]) {
      const res = await raw(path);
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 400, code: 'VALIDATION_FAILED' });
      expect(res.body.url).toBeUndefined(); // the fake metadata echoes what reached it: nothing did
    }
  });

  it('streams large downloads with Range, 206 and the content headers', async () => {
    const jwt = await adminJwt();
    const full = await fetch(`${gw}/api/v1/assets/abc/content/original/download`, { headers: { authorization: `Bearer ${jwt}` } });
    expect(full.status).toBe(200);
    expect(full.headers.get('content-length')).toBe(String(BIG));
    const bytes = Buffer.from(await full.arrayBuffer());
    expect(bytes.length).toBe(BIG);
    expect(createHash('md5').update(bytes).digest('hex')).toBe(createHash('md5').update(Buffer.alloc(BIG, 7)).digest('hex'));

    const part = await fetch(`${gw}/api/v1/assets/abc/content/original/download`, {
      headers: { authorization: `Bearer ${jwt}`, range: 'bytes=100-199' },
    });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 100-199/${BIG}`);
    expect(part.headers.get('etag')).toBe('"abc123"');
    expect(part.headers.get('content-disposition')).toBe('attachment; filename="big.bin"');
    expect((await part.arrayBuffer()).byteLength).toBe(100);
  });

  it('abandons an upstream or object store that answers nothing after its timeout (503), but not a download whose own client reads slowly', async () => {
    // Short so the hung store is abandoned soon, scaled so that the answers that do come (from this process) are not
    // abandoned too on a slower machine; the client's pauses below stay several times longer than it.
    const timeoutMs = scaled(400);
    const { server, url } = await startGateway(metadataUrl, undefined, { upstreamTimeoutMs: timeoutMs, storeTimeoutMs: timeoutMs });
    try {
      const jwt = await adminJwt();
      const started = Date.now();
      const hung = await fetch(`${url}/api/v1/assets/abc/content/hung/download`, { headers: { authorization: `Bearer ${jwt}` } });
      expect(hung.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(scaled(3000));

      // 8 MiB read a piece at a time, with pauses several times the timeout: the sockets idle because of us.
      const slow = await fetch(`${url}/api/v1/assets/abc/content/original/download`, { headers: { authorization: `Bearer ${jwt}` } });
      expect(slow.status).toBe(200);
      const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
      let received = 0;
      for (let pauses = 0; ; pauses++) {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.length;
        if (pauses < 3) await new Promise((r) => setTimeout(r, 3 * timeoutMs));
      }
      expect(received).toBe(BIG);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('streams a download metadata redirects to the object store: its headers, the granted range, nothing internal leaks', async () => {
    const jwt = await adminJwt();
    // A client's own accel headers never reach metadata (the gateway sets its own offer).
    const full = await fetch(`${gw}/api/v1/assets/abc/content/thumb/download`, {
      headers: { authorization: `Bearer ${jwt}`, 'x-dam-accel-redirect': 'http://evil.example/' },
    });
    expect(full.status).toBe(200);
    expect(Buffer.from(await full.arrayBuffer())).toEqual(STORED);
    expect(full.headers.get('content-type')).toBe('image/webp');
    expect(full.headers.get('content-length')).toBe(String(STORED.length));
    expect(full.headers.get('etag')).toBe('"stored"');
    expect(full.headers.get('x-seen-accel')).toBe('none');
    expect(full.headers.get('x-dam-accel-redirect')).toBeNull();
    expect(full.headers.get('x-dam-accel-length')).toBeNull();
    expect(full.headers.get('x-amz-request-id')).toBeNull();

    const part = await fetch(`${gw}/api/v1/assets/abc/content/thumb/download`, { headers: { authorization: `Bearer ${jwt}`, range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${STORED.length}`);
    expect(Buffer.from(await part.arrayBuffer()).toString()).toBe('abcdefghij');
    expect(storeRanges.at(-1)).toBe('bytes=10-19');

    // The object is gone from the store: the contract's 404, not a 503.
    const gone = await fetch(`${gw}/api/v1/assets/abc/content/gone/download`, { headers: { authorization: `Bearer ${jwt}` } });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as Json).error.code).toBe('CONTENT_NOT_FOUND');
  });

  it('an unreachable upstream → 503 contract body, quickly; /readyz says so', async () => {
    const deadPort = await freePort();
    const broken = await startGateway(`http://127.0.0.1:${deadPort}`);
    try {
      const started = Date.now();
      const res = await fetch(`${broken.url}/api/v1/assets/abc/data`, { headers: { authorization: `Bearer ${await adminJwt()}` } });
      expect(res.status).toBe(503);
      expect(((await res.json()) as Json).error.code).toBe('UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(5000);
      const ready = await fetch(`${broken.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as Json).checks).toEqual({ auth: true, metadata: false });
      expect((await fetch(`${gw}/readyz`)).status).toBe(200);
    } finally {
      await new Promise((r) => broken.server.close(r));
    }
  });

  it('answers 429 with Retry-After once a caller passes its budget, per caller', async () => {
    const limited = await startGateway(metadataUrl, { perMinute: 6, burst: 3 });
    try {
      const jwt = await adminJwt();
      const call = () => fetch(`${limited.url}/api/v1/assets/abc/data`, { headers: { authorization: `Bearer ${jwt}` } });
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        const res = await call();
        await res.body?.cancel();
        statuses.push(res.status);
      }
      expect(statuses).toEqual([200, 200, 200]);
      const refused = await call();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(WITHIN_A_TOKEN);
      expect(((await refused.json()) as Json).error.code).toBe('RATE_LIMITED');
      // Login is limited by address, apart from the user's budget.
      const login = await fetch(`${limited.url}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password' }),
      });
      expect(login.status).toBe(200);
      expect(login.headers.get('x-ratelimit-remaining')).toBe('2');
    } finally {
      await new Promise((r) => limited.server.close(r));
    }
  });

  /** A stand-in auth that refuses every API key and counts how often it was asked to look one up. */
  async function refusingAuth(): Promise<{ url: string; lookups: () => number; close: () => Promise<unknown> }> {
    let lookups = 0;
    const server = http.createServer((req, res) => {
      if (req.url?.startsWith('/internal/v1/authenticate')) lookups += 1;
      req.resume();
      res.writeHead(req.url?.startsWith('/healthz') ? 200 : 401, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"INVALID_API_KEY","message":"no"}}');
    });
    const url = await listen(server);
    return { url, lookups: () => lookups, close: () => new Promise((r) => server.close(r)) };
  }

  /** Sends `n` requests with a different bogus API key and a different spoofed X-Forwarded-For each. */
  async function bogusKeys(base: string, n: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < n; i += 1) {
      const res = await fetch(`${base}/api/v1/assets/abc/data`, {
        headers: { 'x-service-api-key': `bogus-${i}`, 'x-forwarded-for': `198.51.100.${i}` },
      });
      await res.body?.cancel();
      statuses.push(res.status);
    }
    return statuses;
  }

  it('answers a flood of bad credentials with 429 before asking auth, whatever X-Forwarded-For says', async () => {
    const auth = await refusingAuth();
    const limited = await startGateway(metadataUrl, undefined, {
      limits: { authFailuresPerAddress: { perMinute: 6, burst: 5 } },
      upstreams: { auth: auth.url, metadata: metadataUrl, search: metadataUrl, 'link-signing': metadataUrl, webhook: metadataUrl },
    });
    try {
      const statuses = await bogusKeys(limited.url, 30);
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
      expect(auth.lookups()).toBe(5);
    } finally {
      await new Promise((r) => limited.server.close(r));
      await auth.close();
    }
  });

  it('limits every request per client address before credentials, and a spoofed X-Forwarded-For is no new bucket', async () => {
    const auth = await refusingAuth();
    const limited = await startGateway(metadataUrl, undefined, {
      limits: { perAddress: { perMinute: 6, burst: 3 } },
      upstreams: { auth: auth.url, metadata: metadataUrl, search: metadataUrl, 'link-signing': metadataUrl, webhook: metadataUrl },
    });
    try {
      const statuses = await bogusKeys(limited.url, 20);
      expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
      expect(new Set(statuses.slice(3))).toEqual(new Set([429]));
      // Only the three requests the address could afford reached auth.
      expect(auth.lookups()).toBe(3);
      const refused = await fetch(`${limited.url}/api/v1/assets/abc/data`, { headers: { 'x-forwarded-for': '203.0.113.99' } });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(WITHIN_A_TOKEN);
      expect(((await refused.json()) as Json).error).toEqual({ code: 'RATE_LIMITED', message: expect.any(String) });
      // Public routes (login) spend the same address budget.
      const loginHere = await fetch(`${limited.url}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password' }),
      });
      expect(loginHere.status).toBe(429);
    } finally {
      await new Promise((r) => limited.server.close(r));
      await auth.close();
    }
  });

  it('forwards the client address it determined, not the one the client claims', async () => {
    const jwt = await adminJwt();
    const res = await json(await fetch(`${gw}/api/v1/assets/abc/data`, { headers: { authorization: `Bearer ${jwt}`, 'x-forwarded-for': '6.6.6.6' } }));
    expect(res.body.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(res.body.call.clientAddress).toBe('127.0.0.1');
  });

  it('behind a trusted proxy, forwards the one address it determined instead of appending to the chain', async () => {
    const behind = await startGateway(metadataUrl, undefined, { trustProxy: 1 });
    try {
      const jwt = await adminJwt();
      const res = await json(
        await fetch(`${behind.url}/api/v1/assets/abc/data`, {
          // The client's own claim (6.6.6.6), then the address our one trusted proxy saw.
          headers: { authorization: `Bearer ${jwt}`, 'x-forwarded-for': '6.6.6.6, 203.0.113.7' },
        }),
      );
      expect(res.status).toBe(200);
      expect(res.body.headers['x-forwarded-for']).toBe('203.0.113.7');
      expect(res.body.call.clientAddress).toBe('203.0.113.7');
    } finally {
      await new Promise((r) => behind.server.close(r));
    }
  });
});

describe('the Get Data cache (issue 33)', () => {
  /** metadata as far as Get Data goes: each asset's record at its current version, and how often it was asked. */
  const versions = new Map<string, number>();
  const asked: string[] = [];
  let records: Server;

  beforeAll(async () => {
    records = http.createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      const id = /^\/api\/v1\/assets\/([^/]+)\/data/.exec(req.url ?? '')?.[1];
      if (req.method === 'GET' && id && versions.has(id)) {
        const body = JSON.stringify({ id, version: versions.get(id), user: verifiedCall(req) });
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', etag: `W/"${id}-${versions.get(id)}"`, 'x-upstream-only': 'yes' });
        res.end(body);
        return;
      }
      if (req.method === 'POST' && id) {
        versions.set(id, (versions.get(id) ?? 0) + 1);
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"ASSET_NOT_FOUND","message":"no"}}');
    });
  });
  afterAll(async () => {
    await new Promise((r) => records.close(r));
  });

  it('answers a repeated Get Data itself until metadata says the asset changed, a write passes or NATS is away', async () => {
    const nats = await startNats();
    const gatewayNc = await connectNats(nats.url, 'gateway', nats.seed('gateway'));
    // Notices are published as metadata publishes them: its identity may, and the gateway's may hear them.
    const metadataNc = await connectNats(nats.url, 'metadata', nats.seed('metadata'));
    const cache = new ReadCache({ ttlMs: scaled(60_000), maxBytes: 1 << 20 });
    const follower = await assetChangeFollower(gatewayNc, cache, createLogger({ service: 'gateway-test', level: 'silent' })).start();
    const front = await startGateway(await listen(records), undefined, { readCache: cache });
    try {
      await waitFor(() => cache.isEnabled, { timeoutMs: 10_000 });
      const jwt = await adminJwt();
      const creator = await post(
        '/api/v1/users',
        { email: 'cache-reader@example.com', password: 'password-9', role_id: 4 },
        { authorization: `Bearer ${jwt}` },
      );
      expect(creator.status).toBe(201);
      const otherJwt = (await post('/api/v1/login', { email: 'cache-reader@example.com', password: 'password-9' })).body.jwt as string;
      const read = async (id: string, token = jwt, headers: Record<string, string> = {}) => {
        const res = await fetch(`${front.url}/api/v1/assets/${id}/data`, { headers: { authorization: `Bearer ${token}`, ...headers } });
        const text = await res.text();
        return { status: res.status, body: text ? (JSON.parse(text) as Json) : undefined, headers: res.headers };
      };
      const askedFor = (id: string) => asked.filter((a) => a === `GET /api/v1/assets/${id}/data`).length;
      versions.set('c1', 1);
      versions.set('c2', 1);

      const first = await read('c1');
      const second = await read('c1');
      expect(first.status).toBe(200);
      expect(second).toMatchObject({ status: 200, body: first.body });
      expect(askedFor('c1')).toBe(1);
      // The kept answer carries metadata's type and ETag (a matching If-None-Match is 304), not its other headers.
      expect(second.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(second.headers.get('etag')).toBe('W/"c1-1"');
      expect(second.headers.get('x-upstream-only')).toBeNull();
      // (A header of our own: fetch would add `Cache-Control: no-cache` to a conditional request, which asks for a 200.)
      expect((await read('c1', jwt, { 'if-none-match': 'W/"c1-1"', 'cache-control': 'max-age=0' })).status).toBe(304);
      expect(askedFor('c1')).toBe(1);
      // A client that asks for a fresh answer (Cache-Control: no-cache) gets metadata's, and it is kept for the next.
      expect((await read('c1', jwt, { 'cache-control': 'no-cache' })).status).toBe(200);
      expect(askedFor('c1')).toBe(2);
      await read('c1');
      expect(askedFor('c1')).toBe(2);
      // Another caller is asked for separately: what one may read says nothing of another.
      expect((await read('c1', otherJwt)).body.user.principal.user_id).not.toBe(first.body.user.principal.user_id);
      expect(askedFor('c1')).toBe(3);

      // metadata's notice of a change: the next read asks again and gets the new record; other assets stay kept.
      await read('c2');
      versions.set('c1', 2);
      metadataNc.publish(SUBJECT_ASSETS_CHANGED, JSON.stringify(['c1']));
      await metadataNc.flush();
      await waitFor(async () => (await read('c1')).body.version === 2, { timeoutMs: 10_000 });
      expect(askedFor('c1')).toBe(4);
      await read('c2');
      expect(askedFor('c2')).toBe(1);

      // A write through this gateway: the caller's next read is the record after it, with no notice at all.
      expect(
        await fetch(`${front.url}/api/v1/assets/c2/data/update`, {
          method: 'POST',
          headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
          body: '{"data":{}}',
        }).then((r) => r.status),
      ).toBe(200);
      expect((await read('c2')).body.version).toBe(2);
      expect(askedFor('c2')).toBe(2);

      // `*`: notices were missed; everything goes.
      metadataNc.publish(SUBJECT_ASSETS_CHANGED, JSON.stringify(['*']));
      await metadataNc.flush();
      await waitFor(() => cache.stats().entries === 0, { timeoutMs: 10_000 });

      // A 404 is never kept.
      await read('nope');
      await read('nope');
      expect(askedFor('nope')).toBe(2);

      // NATS away: notices cannot arrive, so every read asks metadata; back, the cache serves again.
      await read('c1');
      await nats.pause();
      await waitFor(() => !cache.isEnabled, { timeoutMs: 20_000 });
      const during = askedFor('c1');
      await read('c1');
      await read('c1');
      expect(askedFor('c1')).toBe(during + 2);
      await nats.resume();
      await waitFor(() => cache.isEnabled, { timeoutMs: 30_000 });
      await read('c1');
      await read('c1');
      expect(askedFor('c1')).toBe(during + 3);
      // An identity that may not hear the notices (a dam-nats-auth from before the cache): the subscription is refused
      // and the cache stays off, rather than keeping answers nothing would ever drop.
      const deaf = await connectNats(nats.url, 'upload', nats.seed('upload'));
      const deafCache = new ReadCache({ ttlMs: 60_000, maxBytes: 1 << 20 });
      const deafFollower = await assetChangeFollower(deaf, deafCache, createLogger({ service: 'gateway-test', level: 'silent' })).start();
      await deaf.flush();
      await new Promise((r) => setTimeout(r, 200));
      expect(deafCache.isEnabled).toBe(false);
      await deafFollower.stop();
      await deaf.close();
    } finally {
      await follower.stop();
      await new Promise((r) => front.server.close(r));
      await gatewayNc.close();
      await metadataNc.close();
      await nats.stop();
    }
  });
});
