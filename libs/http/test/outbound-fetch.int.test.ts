import { createServer, type Server } from 'node:http';
import { guardedPost, HostRateLimiter, openGuardedDownload, OutboundError, type GuardedDownloadOptions } from '../src/outbound-fetch';

let server: Server;
let base: string;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/ok') res.end('hello');
    else if (url.startsWith('/hop/')) {
      const n = Number(url.slice(5));
      res.writeHead(302, { location: n > 0 ? `/hop/${n - 1}` : '/ok' });
      res.end();
    } else if (url === '/big') {
      res.writeHead(200, { 'content-length': '1000000' });
      res.end(Buffer.alloc(1_000_000));
    } else if (url === '/stall') {
      res.writeHead(200);
      res.write('a');
    } else if (url === '/to-metadata') {
      res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data' });
      res.end();
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const opts = (extra: Partial<GuardedDownloadOptions> = {}): GuardedDownloadOptions => ({
  allowHosts: ['127.0.0.1'],
  maxBytes: 10_000,
  connectTimeoutMs: 2000,
  idleTimeoutMs: 300,
  ...extra,
});
const read = async (body: NodeJS.ReadableStream): Promise<string> => {
  let text = '';
  for await (const chunk of body) text += String(chunk);
  return text;
};
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'no error',
    (e: unknown) => (e instanceof OutboundError ? e.code : String(e)),
  );

describe('openGuardedDownload', () => {
  it('streams from an allowed host and follows redirects up to the limit', async () => {
    const d = await openGuardedDownload(`${base}/hop/4`, opts());
    expect(await read(d.body)).toBe('hello');
    expect(d.finalUrl).toBe(`${base}/ok`);
    expect(await failure(openGuardedDownload(`${base}/hop/5`, opts()))).toBe('TOO_MANY_REDIRECTS');
  });

  it('refuses loopback unless allowed, in every spelling', async () => {
    for (const url of [
      `http://127.0.0.1:${port}/ok`,
      `https://127.0.0.1:${port}/ok`,
      `https://2130706433:${port}/ok`,
      `https://0x7f.1:${port}/ok`,
      `https://[::ffff:127.0.0.1]:${port}/ok`,
    ]) {
      expect([url, await failure(openGuardedDownload(url, opts({ allowHosts: [] })))]).toEqual([url, expect.stringMatching(/REFUSED_ADDRESS|BAD_URL/)]);
    }
  });

  it('checks every resolved address and connects to the one it checked (no rebinding)', async () => {
    const privateName = opts({ allowHosts: [], resolve: async () => [{ address: '10.1.2.3', family: 4 }] });
    expect(await failure(openGuardedDownload('https://files.example.com/x', privateName))).toBe('REFUSED_ADDRESS');
    const mixed = opts({
      allowHosts: [],
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
    });
    expect(await failure(openGuardedDownload('https://files.example.com/x', mixed))).toBe('REFUSED_ADDRESS');
    // An allowed name is connected to at the address the check returned, whatever the system resolver says.
    let calls = 0;
    const pinned = opts({
      allowHosts: ['files.test'],
      resolve: async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]),
    });
    const d = await openGuardedDownload(`http://files.test:${port}/ok`, pinned);
    expect(await read(d.body)).toBe('hello');
    expect(calls).toBe(1);
  });

  it('re-checks after a redirect: an allowed host redirecting to a metadata address is refused', async () => {
    expect(await failure(openGuardedDownload(`${base}/to-metadata`, opts()))).toBe('REFUSED_ADDRESS');
  });

  it('fails on error statuses, announced sizes over the limit, stalls, and hosts over their rate', async () => {
    expect(await failure(openGuardedDownload(`${base}/missing`, opts()))).toBe('HTTP_STATUS');
    expect(await failure(openGuardedDownload(`${base}/big`, opts()))).toBe('TOO_LARGE');
    const stalled = await openGuardedDownload(`${base}/stall`, opts());
    expect(await failure(read(stalled.body))).toBe('TIMEOUT');
    const limiter = new HostRateLimiter(60, 1);
    await openGuardedDownload(`${base}/ok`, opts({ rateLimiter: limiter })).then((d) => read(d.body));
    expect(await failure(openGuardedDownload(`${base}/ok`, opts({ rateLimiter: limiter })))).toBe('RATE_LIMITED');
  });
});

describe('HostRateLimiter', () => {
  it('refills per host over time', () => {
    let now = 0;
    const limiter = new HostRateLimiter(60, 2, () => now);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('b')]).toEqual([true, true, false, true]);
    now += 1000;
    expect(limiter.take('a')).toBe(true);
    expect(limiter.take('a')).toBe(false);
  });
});

describe('guardedPost', () => {
  it('reaches an allow-listed host:port, and nothing else on that host however it is spelt (security review F18)', async () => {
    const allowHosts = [`127.0.0.1:${port}`];
    const post = (url: string) => failure(guardedPost(url, { allowHosts, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 }));
    expect(await guardedPost(`${base}/ok`, { allowHosts, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 })).toEqual({ status: 200 });
    expect(await guardedPost(`http://0x7f000001:${port}/ok`, { allowHosts, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 })).toEqual({ status: 200 });
    for (const url of [`http://127.0.0.1:${port + 1}/`, 'http://127.0.0.1:8222/varz', 'https://0x7f000001/', `http://localhost:${port}/ok`]) {
      expect([url, await post(url)]).toEqual([url, expect.stringMatching(/^(REFUSED_ADDRESS|BAD_URL)$/)]);
    }
  });

  it('sends again on a new connection when the server closed the kept-alive one as it was reused', async () => {
    // A receiver that drops an idle connection just as the next request arrives on it (its idle timeout meeting
    // that request): the second request on a connection is met by the socket's end; a new connection is answered.
    const got: string[] = [];
    const perSocket = new WeakMap<object, number>();
    const receiver = createServer((req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      if (n > 1) {
        req.socket.destroy();
        return;
      }
      req.on('data', (c: Buffer) => got.push(String(c)));
      req.on('end', () => res.end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const address = receiver.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    const post = (body: string) =>
      guardedPost(url, { allowHosts: ['127.0.0.1'], headers: { 'content-type': 'text/plain' }, body: Buffer.from(body), timeoutMs: 2000 });
    try {
      expect(await post('first')).toEqual({ status: 200 });
      // The first answer's connection is kept alive and reused by the second request, which the receiver drops.
      expect(await post('second')).toEqual({ status: 200 });
      expect(got).toEqual(['first', 'second']);
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('does not send again when a new connection fails', async () => {
    const refused = createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => refused.listen(0, '127.0.0.1', resolve));
    const address = refused.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    let requests = 0;
    refused.on('request', () => requests++);
    try {
      expect(await failure(guardedPost(url, { allowHosts: ['127.0.0.1'], headers: {}, body: Buffer.from('x'), timeoutMs: 2000 }))).toBe('NETWORK');
      expect(requests).toBe(1);
    } finally {
      refused.closeAllConnections();
      await new Promise((resolve) => refused.close(resolve));
    }
  });
});
