import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@dam/logging';
import { answerParserErrors, createHttpApp, finishApp, MAX_JSON_DEPTH, parseTrustProxy, rejectNul, type TrustProxy } from '../src';

/** An app with a few routes, its log lines captured; `fn` gets its base URL. */
async function withApp(fn: (base: string, logs: string[]) => Promise<void>, trustProxy?: TrustProxy): Promise<void> {
  const logs: string[] = [];
  const logger = createLogger({
    service: 'test',
    level: 'debug',
    destination: new Writable({
      write: (chunk: Buffer, _e, cb) => {
        logs.push(chunk.toString());
        cb();
      },
    }),
  });
  const app = createHttpApp({ logger, ...(trustProxy === undefined ? {} : { trustProxy }) });
  app.post('/things/:id', (req, res) => {
    res.json({ id: req.params.id, body: req.body as unknown });
  });
  app.get('/ip', (req, res) => {
    res.json({ ip: req.ip });
  });
  app.get('/boom', () => {
    throw new Error('kaboom');
  });
  // Headers that carry a credential in a URL: a tus Location made with ?uploadkey, and the gateway's presigned download.
  app.get('/made', (_req, res) => {
    res.setHeader('Location', 'http://127.0.0.1:8081/api/v1/uploads/tus/abc?uploadkey=upk_SECRETLOCATION');
    res.setHeader('x-dam-accel-redirect', 'http://s3/dam/originals/1/a?X-Amz-Credential=SECRETCRED&X-Amz-Signature=SECRETAMZ&X-Amz-Expires=300');
    res.status(201).json({});
  });
  finishApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  answerParserErrors(server);
  await new Promise((r) => server.once('listening', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

const json = { 'content-type': 'application/json' };
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; details?: Array<{ path: string }> } }).error;

/** Sends `raw` bytes as a request and returns the whole answer. */
function rawRequest(base: string, raw: string): Promise<string> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(raw));
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('NUL characters', () => {
  it('answers 400 VALIDATION_FAILED for a NUL in any JSON string or key, naming where', async () => {
    await withApp(async (base) => {
      let res = await fetch(`${base}/things/a`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'ok', tags: ['x', 'a\u0000b'] }) });
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'tags.1' }] });
      res = await fetch(`${base}/things/a`, { method: 'POST', headers: json, body: JSON.stringify({ ['k\u0000']: 1 }) });
      expect(res.status).toBe(400);
      res = await fetch(`${base}/things/a`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'ok' }) });
      expect(res.status).toBe(200);
    });
  });

  it('answers 400 VALIDATION_FAILED, not 500, for JSON nested past MAX_JSON_DEPTH (security review F11)', async () => {
    await withApp(async (base) => {
      // 6,000 levels in 12 KB overflowed the recursive NUL check's stack: 500 INTERNAL_ERROR on every JSON route.
      for (const body of ['['.repeat(6000) + ']'.repeat(6000), `{"name":"ok","deep":${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}}`]) {
        const res = await fetch(`${base}/things/a`, { method: 'POST', headers: json, body });
        expect(res.status).toBe(400);
        expect(await errorOf(res)).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` }] });
      }
      // At the limit still taken; a NUL is still found first where it comes first.
      const atLimit = `{"name":"ok","deep":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`;
      expect((await fetch(`${base}/things/a`, { method: 'POST', headers: json, body: atLimit })).status).toBe(200);
      const nulFirst = await fetch(`${base}/things/a`, { method: 'POST', headers: json, body: `{"a":"x\\u0000","b":${'['.repeat(500)}${']'.repeat(500)}}` });
      expect(await errorOf(nulFirst)).toMatchObject({ details: [{ path: 'a', message: 'must not contain a NUL character' }] });
    });
  });

  it('answers 400 for %00 in a path parameter or the query', async () => {
    await withApp(async (base) => {
      let res = await fetch(`${base}/things/a%00b`, { method: 'POST', headers: json, body: '{}' });
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'path' }] });
      res = await fetch(`${base}/ip?x=%00`);
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({ details: [{ path: 'query' }] });
    });
  });

  it('gives multipart receivers the same check', () => {
    expect(() => rejectNul('a\u0000.png', 'files.0.name')).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    expect(() => rejectNul('a.png', 'files.0.name')).not.toThrow();
  });
});

describe('text encoding of JSON bodies (CONTRACT §16)', () => {
  const post = (base: string, body: Buffer, type = 'application/json') =>
    fetch(`${base}/things/a`, { method: 'POST', headers: { 'content-type': type }, body });

  it('answers 400 VALIDATION_FAILED for a body that is not valid UTF-8, and no route runs', async () => {
    await withApp(async (base) => {
      // Before: each bad byte became U+FFFD and the route took {"name":"a\ufffdb"} as what the client sent.
      const bad = [
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff]), Buffer.from('b"}')]), // never valid in UTF-8
        Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xc3]), Buffer.from('"}')]), // a sequence cut short
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), // overlong "/"
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // a lone surrogate
      ];
      for (const body of bad) {
        const res = await post(base, body);
        expect(res.status).toBe(400);
        expect(await errorOf(res)).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: '(body)', message: 'must be valid UTF-8' }] });
      }
      // Declared UTF-8 is the same check; a `+json` type is parsed and checked alike.
      expect((await post(base, bad[0] as Buffer, 'application/json; charset=utf-8')).status).toBe(400);
      expect((await post(base, bad[0] as Buffer, 'application/merge-patch+json')).status).toBe(400);
    });
  });

  it('still takes valid UTF-8 of every length, a BOM and other declared utf-* charsets', async () => {
    await withApp(async (base) => {
      const name = 'caf\u00e9 \u6771\u4eac \u{1F600}';
      const res = await post(base, Buffer.from(JSON.stringify({ name })));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ id: 'a', body: { name } });
      expect((await post(base, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"x"}')]))).status).toBe(200);
      const utf16 = await post(base, Buffer.from('{"name":"\u00e9"}', 'utf16le'), 'application/json; charset=utf-16le');
      expect(await utf16.json()).toEqual({ id: 'a', body: { name: '\u00e9' } });
      // An unpaired surrogate in UTF-16 is not text either.
      const lone = Buffer.concat([Buffer.from('{"name":"', 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('"}', 'utf16le')]);
      expect((await post(base, lone, 'application/json; charset=utf-16le')).status).toBe(400);
    });
  });
});

describe('response headers', () => {
  it('sends X-Content-Type-Options: nosniff on every response, errors included', async () => {
    await withApp(async (base) => {
      for (const path of ['/healthz', '/ip', '/nowhere', '/boom']) {
        expect((await fetch(`${base}${path}`)).headers.get('x-content-type-options')).toBe('nosniff');
      }
    });
  });
});

describe('client address', () => {
  it('ignores a client-supplied X-Forwarded-For by default', async () => {
    await withApp(async (base) => {
      const res = await fetch(`${base}/ip`, { headers: { 'x-forwarded-for': '198.51.100.9' } });
      expect(((await res.json()) as { ip: string }).ip).toBe('127.0.0.1');
    });
  });

  it('believes exactly the configured number of proxy hops', async () => {
    await withApp(async (base) => {
      // One trusted hop (us, the "proxy" on loopback): the address it appended is the client's; the
      // client's own claim before it is not.
      const res = await fetch(`${base}/ip`, { headers: { 'x-forwarded-for': '10.9.9.9, 198.51.100.9' } });
      expect(((await res.json()) as { ip: string }).ip).toBe('198.51.100.9');
    }, 1);
  });

  it('parses TRUST_PROXY', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('0')).toBe(false);
    expect(parseTrustProxy('none')).toBe(false);
    expect(parseTrustProxy(' NONE ')).toBe(false);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.0/8, loopback')).toEqual(['10.0.0.0/8', 'loopback']);
    expect(() => parseTrustProxy('true')).toThrow(/hop count/);
  });
});

describe('credentials in logs', () => {
  it('logs no JWT, upload key or signature from a URL, in access and error lines', async () => {
    await withApp(async (base, logs) => {
      await fetch(`${base}/ip?_jwt=eyJSECRETJWT&n=1`);
      await fetch(`${base}/boom?uploadkey=SECRETUPLOADKEY&signature=SECRETSIG`);
      await fetch(`${base}/ip`, { headers: { authorization: 'Bearer SECRETBEARER', 'x-service-api-key': 'SECRETAPIKEY', 'x-upload-key': 'SECRETUK' } });
      // Security review F10: credentials in response headers' URLs, logged with the response.
      await fetch(`${base}/made`);
      // The access lines are written once each response has finished, after fetch has it: waited for.
      for (const until = Date.now() + 10_000; logs.filter((l) => l.includes('"responseTime"')).length < 4 && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const all = logs.join('');
      expect(all).toContain('/ip?_jwt=[redacted]&n=1');
      expect(all).toContain('"location":"http://127.0.0.1:8081/api/v1/uploads/tus/abc?uploadkey=[redacted]"');
      expect(all).toContain('X-Amz-Signature=[redacted]');
      expect(all).toContain('kaboom');
      expect(all).not.toMatch(/SECRET/);
    });
  });
});

describe('requests refused by the HTTP parser', () => {
  it('answers a malformed Content-Length with the contract error body', async () => {
    await withApp(async (base) => {
      const answer = await rawRequest(base, 'POST /things/a HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toMatch(/content-type: application\/json/i);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: 'BAD_REQUEST', message: expect.any(String) } });
    });
  });

  it('answers oversized headers with 431 and the contract error body', async () => {
    await withApp(async (base) => {
      const answer = await rawRequest(base, `GET /ip HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 431 /);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.code).toBe('HEADERS_TOO_LARGE');
    });
  });
});
