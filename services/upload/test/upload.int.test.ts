/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { request, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createAuthenticator, permissionsFor, signJwt } from '@dam/auth-tokens';
import { createLogger } from '@dam/logging';
import { sampleValue } from '@dam/metrics';
import { createStorage } from '@dam/storage';
import { s3Env, scaled, startServiceProcess, testMinioClient, testS3Config, waitFor, type ServiceProcess } from '@dam/testing';
import { httpMetadataClient } from '../src/adapters/metadata.client';
import type { PendingJournal } from '../src/domain/ports';
import { buildUploadApp, type UploadAppDeps } from '../src/app';
import { startUploadFixtures, type UploadFixtures } from './harness';
import { makePng, makeVideo } from '@dam/testing';

const JWT_SECRET = 'jwt-secret-for-upload-tests-0123456789';
const MAX_UPLOAD_BYTES = 256 * 1024;

let bucket: string;
let fx: UploadFixtures;
let metadata: ServiceProcess;
let server: Server;
let url: string;
let journal: PendingJournal;

beforeAll(async () => {
  fx = await startUploadFixtures('upload');
  ({ bucket, metadata, journal } = fx);
  ({ server, url } = await startUpload(MAX_UPLOAD_BYTES));
}, scaled(120_000));

async function startUpload(maxUploadBytes: number, extra: Partial<UploadAppDeps> = {}): Promise<{ server: Server; url: string }> {
  const s3 = testS3Config(bucket);
  const storage = createStorage({ ...s3, partSize: 5 * 1024 * 1024 });
  const app = buildUploadApp({
    logger: createLogger({ service: 'upload-test', level: process.env.LOG_LEVEL ?? 'silent' }),
    storage,
    metadata: httpMetadataClient({ baseUrl: metadata.url, signer: fx.identities.signer('upload') }),
    journal,
    // No auth service in this test: API keys would answer 503, JWTs are checked locally.
    authenticate: createAuthenticator({ jwtSecret: JWT_SECRET, authUrl: 'http://127.0.0.1:9', signer: fx.identities.signer('upload') }),
    maxUploadBytes,
    // Explicit, whatever TRUST_PROXY the test runs under: the test client is on loopback, so trusting
    // loopback would let its own X-Forwarded-For pick the address.
    trustProxy: false,
    ...extra,
  });
  const srv: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = srv.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { server: srv, url: `http://127.0.0.1:${port}/api/v1/assets/new/content/original/upload` };
}

async function stopServer(srv: Server | undefined): Promise<void> {
  if (!srv) return;
  srv.closeAllConnections();
  await new Promise((resolve) => srv.close(resolve));
}

afterAll(async () => {
  await stopServer(server);
  await fx?.stop();
});

let nextGroup = 100;
/** Each test uploads into its own group, so "no object under originals/<gid>/" checks only its own writes. */
function newCaller() {
  const gid = nextGroup++;
  const { token } = signJwt({ sub: 5, gid, role: 1 }, JWT_SECRET, 600);
  return { gid, auth: { authorization: `Bearer ${token}` } };
}

async function objectsUnder(prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of testMinioClient().listObjectsV2(bucket, prefix, true)) if (item.name) names.push(item.name);
  return names;
}

async function readObject(key: string): Promise<Buffer> {
  const stream = await testMinioClient().getObject(bucket, key);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const settledFor = (ms: number) => new Promise<boolean>((r) => setTimeout(() => r(true), ms));
// A full collection before each sample, so the figure is what is still referenced, not garbage awaiting GC.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;
const memory = () => {
  collect();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
/**
 * Samples memory() until stopped; returns the peak. Each full collection is followed by a pause four times as long
 * (at least 100 ms): in a jest worker that has loaded many suites a collection can take longer than a fixed 100 ms
 * period, and back-to-back collections then starved the upload they measure (it hung past the test's 2 minutes in
 * a full run on two busy cores).
 */
function memoryPeak(): { stop(): number } {
  let peak = memory();
  let timer: NodeJS.Timeout | undefined;
  const sample = () => {
    const started = performance.now();
    peak = Math.max(peak, memory());
    timer = setTimeout(sample, Math.max(100, 4 * (performance.now() - started)));
  };
  timer = setTimeout(sample, 100);
  return {
    stop() {
      clearTimeout(timer);
      return peak;
    },
  };
}
function httpPost(target: string, headers: Record<string, string>, body: Readable): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    body.pipe(req);
  });
}
/**
 * The limit tests refill a token every 10 s (6 a minute), so that a slow machine sending their requests cannot earn
 * one back mid-test; Retry-After is then the whole seconds until the next token, 1 to 10.
 */
const WITHIN_A_TOKEN = /^([1-9]|10)$/;
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

describe('POST /api/v1/assets/new/content/original/upload', () => {
  it('stores an image, sniffs its type (ignoring the client type) and reads its dimensions', async () => {
    const { gid, auth } = newCaller();
    const png = makePng(7, 5);
    const form = new FormData();
    form.append('file', new Blob([png], { type: 'application/pdf' }), 'photo.jpg');
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ success: true, provider: 'local' });
    expect(body.files).toHaveLength(1);
    const [file] = body.files;
    expect(file).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
      name: 'photo.jpg',
      size: png.length,
      checksum: md5(png),
      content_type: 'image/png',
      metadata: { width: 7, height: 5 },
      status: 'NOT_READY',
    });
    expect(await readObject(`originals/${gid}/${file.id}`)).toEqual(png);

    // metadata has the record, NOT_READY until a conversion report arrives.
    const principal = { user_id: 5, group_id: gid, role_id: 1, role_name: 'ADMIN', permissions: permissionsFor('ADMIN'), via: 'jwt' as const };
    const path = `/api/v1/assets/${file.id}/data`;
    const data = await fetch(`${metadata.url}${path}`, { headers: fx.identities.headers('gateway', { audience: 'metadata', method: 'GET', path, principal }) });
    expect(data.status).toBe(200);
    expect(await data.json()).toMatchObject({ id: file.id, status: 'NOT_READY', checksum: md5(png), creator_id: 5, metadata: { width: 7, height: 5 } });
  });

  it('creates one asset per file part, whatever the field names, and applies custom_metadata', async () => {
    const { gid, auth } = newCaller();
    const text = Buffer.from('plain words, nothing else\n');
    const binary = Buffer.from([0, 1, 2, 3, 254, 255, 0, 7]);
    const form = new FormData();
    form.append('custom_metadata', JSON.stringify({ data: { project: 'x' } }));
    form.append('file1', new Blob([text]), 'notes.txt');
    form.append('anything', new Blob([binary]), 'blob.bin');
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(200);
    const { files } = (await res.json()) as any;
    expect(files.map((f: any) => [f.name, f.size, f.checksum, f.content_type])).toEqual([
      ['notes.txt', text.length, md5(text), 'text/plain'],
      ['blob.bin', binary.length, md5(binary), 'application/octet-stream'],
    ]);
    expect(files[0].id).not.toBe(files[1].id);
    expect((await objectsUnder(`originals/${gid}/`)).sort()).toEqual(files.map((f: any) => `originals/${gid}/${f.id}`).sort());
    // Registered: nothing is left pending for the reaper.
    expect(await journal.stale(-60_000)).toEqual([]);
  });

  it.each([
    ['rejected by metadata (reserved key)', JSON.stringify({ data: { _service_x: 1 } }), 'VALIDATION_FAILED'],
    ['malformed JSON', '{"data": ', 'INVALID_CUSTOM_METADATA'],
  ])('answers 400 for custom_metadata %s and leaves no object behind', async (_label, custom, code) => {
    const { gid, auth } = newCaller();
    const form = new FormData();
    form.append('file', new Blob([makePng(3, 3)]), 'a.png');
    form.append('file2', new Blob([Buffer.from('second')]), 'b.txt');
    // After the files, so they are already stored when the problem shows.
    form.append('custom_metadata', custom);
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe(code);
    expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
    // Removed by the request itself: nothing is left pending either.
    expect(await journal.stale(-60_000)).toEqual([]);
  });

  it('stores an empty file as an empty asset', async () => {
    const { gid, auth } = newCaller();
    const form = new FormData();
    form.append('file', new Blob([]), 'empty.bin');
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(200);
    const [file] = ((await res.json()) as any).files;
    expect(file).toMatchObject({ name: 'empty.bin', size: 0, checksum: md5(Buffer.alloc(0)), content_type: 'application/octet-stream' });
    expect(await readObject(`originals/${gid}/${file.id}`)).toEqual(Buffer.alloc(0));
  });

  it('answers 413 at once for a declared Content-Length over MAX_UPLOAD_BYTES', async () => {
    const { gid, auth } = newCaller();
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(MAX_UPLOAD_BYTES + 1024, 1)]), 'big.bin');
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.code).toBe('UPLOAD_TOO_LARGE');
    expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
  });

  /** A chunked multipart body (no Content-Length): a small file, then `bigBytes` of a second one. */
  function streamedBody(bigBytes: number, onChunk: (sent: number) => void = () => undefined) {
    const boundary = 'dam-test-boundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="small"; filename="ok.txt"\r\n\r\nsmall file\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 7);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        onChunk(sent);
        if (sent >= bigBytes) {
          controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
          controller.close();
          return;
        }
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
    return { body, contentType: `multipart/form-data; boundary=${boundary}` };
  }

  const post = (target: string, auth: Record<string, string>, streamed: ReturnType<typeof streamedBody>, signal?: AbortSignal) =>
    fetch(target, {
      method: 'POST',
      headers: { ...auth, 'content-type': streamed.contentType },
      body: streamed.body,
      duplex: 'half',
      signal,
    } as RequestInit);

  it('answers 413 when a streamed body (no Content-Length) passes MAX_UPLOAD_BYTES, and removes what it stored', async () => {
    const { gid, auth } = newCaller();
    const res = await post(url, auth, streamedBody(MAX_UPLOAD_BYTES * 3));
    expect(res.status).toBe(413);
    await res.arrayBuffer();
    expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
  });

  it('stops a stream that passes the limit after S3 writing began (multipart), and removes its object', async () => {
    const big = await startUpload(3 * 1024 * 1024);
    try {
      const { gid, auth } = newCaller();
      const res = await post(big.url, auth, streamedBody(12 * 1024 * 1024));
      expect(res.status).toBe(413);
      await res.arrayBuffer();
      expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
      // An ended (not errored) source lets minio complete or abort its multipart upload: none is left open.
      const open: unknown[] = [];
      for await (const u of testMinioClient().listIncompleteUploads(bucket, `originals/${gid}/`, true)) open.push(u);
      expect(open).toEqual([]);
    } finally {
      await stopServer(big.server);
    }
  });

  it(
    'streams a large file with flat memory and the right checksum',
    async () => {
      const big = await startUpload(1024 * 1024 * 1024);
      try {
        const { gid, auth } = newCaller();
        const total = 96 * 1024 * 1024;
        const streamed = streamedBody(total);
        const nodeBody = Readable.fromWeb(streamed.body as import('node:stream/web').ReadableStream);
        // The same bytes the body sends for the big part: 64 KiB chunks of 7.
        const expected = createHash('md5');
        for (let n = 0; n < total; n += 64 * 1024) expected.update(Buffer.alloc(64 * 1024, 7));
        const base = memory();
        const sampler = memoryPeak();
        // node:http rather than fetch: it writes with back-pressure, so the client holds no more than a socket buffer.
        const res = await httpPost(big.url, { ...auth, 'content-type': streamed.contentType }, nodeBody);
        const peak = sampler.stop();
        expect(res.status).toBe(200);
        const { files } = JSON.parse(res.body) as any;
        expect(files[1]).toMatchObject({ name: 'big.bin', size: total, checksum: expected.digest('hex') });
        expect((await testMinioClient().statObject(bucket, `originals/${gid}/${files[1].id}`)).size).toBe(total);
        // Live heap plus Buffers after a full GC: a whole-file buffer would add ~96 MiB, streaming a few parts.
        expect(peak - base).toBeLessThan(64 * 1024 * 1024);
      } finally {
        await stopServer(big.server);
      }
    },
    scaled(120_000),
  );

  it('removes every stored object when the client aborts mid-upload', async () => {
    const big = await startUpload(64 * 1024 * 1024);
    try {
      const { gid, auth } = newCaller();
      const controller = new AbortController();
      const streamed = streamedBody(40 * 1024 * 1024, (sent) => {
        if (sent >= 8 * 1024 * 1024) controller.abort();
      });
      await expect(post(big.url, auth, streamed, controller.signal)).rejects.toThrow();
      await waitFor(async () => (await objectsUnder(`originals/${gid}/`)).length === 0 && (await settledFor(500)), {
        timeoutMs: 15_000,
        description: 'no object left after the abort',
      });
      // Give a late writer the chance to prove us wrong (a slower machine's writer is later).
      await new Promise((r) => setTimeout(r, scaled(1500)));
      expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
    } finally {
      await stopServer(big.server);
    }
  });

  it('answers 400 when there is no file part', async () => {
    const { auth } = newCaller();
    const form = new FormData();
    form.append('custom_metadata', JSON.stringify({ data: {} }));
    const res = await fetch(url, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe('NO_FILE');
  });

  it('answers 400 for a body that is not multipart', async () => {
    const { auth } = newCaller();
    const res = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: 'abc' });
    expect(res.status).toBe(400);
  });

  it('answers 401 without credentials and with a bad token', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('x')]), 'x.txt');
    expect((await fetch(url, { method: 'POST', body: form })).status).toBe(401);
    expect((await fetch(url, { method: 'POST', headers: { authorization: 'Bearer nope' }, body: form })).status).toBe(401);
  });
});

describe('upload limits', () => {
  /**
   * Sends the head of a multipart body and part of a file, then nothing more; resolves with the answer once
   * the server has closed the connection.
   */
  function stalledUpload(
    target: string,
    headers: Record<string, string>,
    declared = 10 * 1024 * 1024,
  ): Promise<{ status: number; body: string; connection: string | undefined; closedAfterMs: number }> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const boundary = 'stall-boundary';
      const req = request(target, {
        method: 'POST',
        // A fresh connection, so its closing is this request's doing.
        agent: false,
        headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(declared) },
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const answer = { status: res.statusCode ?? 0, body: text, connection: res.headers.connection };
          // The request body was never finished: only the server closing the socket ends it.
          const socket = req.socket;
          if (!socket || socket.destroyed) resolve({ ...answer, closedAfterMs: Date.now() - started });
          else socket.once('close', () => resolve({ ...answer, closedAfterMs: Date.now() - started }));
        });
      });
      req.on('error', reject);
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      req.write(Buffer.alloc(64 * 1024, 1)); // ...and then the client stalls
    });
  }

  it('closes a stalled upload after the idle timeout with 408, and removes what it stored', async () => {
    const idle = await startUpload(64 * 1024 * 1024, { idleTimeoutMs: 700 });
    try {
      const { gid, auth } = newCaller();
      const answer = await stalledUpload(idle.url, auth);
      expect(answer.status).toBe(408);
      expect(JSON.parse(answer.body)).toEqual({ error: { code: 'UPLOAD_IDLE_TIMEOUT', message: expect.any(String) } });
      expect(answer.connection).toBe('close');
      expect(answer.closedAfterMs).toBeGreaterThanOrEqual(700);
      expect(answer.closedAfterMs).toBeLessThan(10_000);
      await waitFor(async () => (await objectsUnder(`originals/${gid}/`)).length === 0, { timeoutMs: 10_000, description: 'no object left' });
    } finally {
      await stopServer(idle.server);
    }
  });

  it('bounds a repeat under a kept Idempotency-Key: 429 past the cap, 408 when it stalls, 413 past the limit (security review F6)', async () => {
    const srv = await startUpload(4 * 1024 * 1024, { idleTimeoutMs: scaled(1000), maxConcurrentPerPrincipal: 1 });
    try {
      const { auth } = newCaller();
      const keyed = { ...auth, 'idempotency-key': 'repeat-bounds' };
      const form = () => {
        const f = new FormData();
        f.append('file', new Blob([Buffer.from('hello')]), 'hello.txt');
        return f;
      };
      expect((await fetch(srv.url, { method: 'POST', headers: keyed, body: form() })).status).toBe(200);
      // A repeat read only to be compared with the first: it stalls (it stayed open for ever before).
      const stalled = Promise.race([stalledUpload(srv.url, keyed, 1024 * 1024), settledFor(scaled(15_000)).then(() => undefined)]);
      await settledFor(scaled(300));
      // Meanwhile it holds the caller's one upload slot (before: replayed with 200).
      const during = await fetch(srv.url, { method: 'POST', headers: keyed, body: form() });
      expect(during.status).toBe(429);
      const answer = await stalled;
      expect(answer?.status).toBe(408);
      expect(JSON.parse(answer?.body ?? '{}')).toEqual({ error: { code: 'UPLOAD_IDLE_TIMEOUT', message: expect.any(String) } });
      // More than the route takes is refused before it is read.
      const huge = await stalledUpload(srv.url, keyed, 10 * 1024 * 1024);
      expect(huge.status).toBe(413);
      expect(JSON.parse(huge.body).error.code).toBe('UPLOAD_TOO_LARGE');
      const again = await fetch(srv.url, { method: 'POST', headers: keyed, body: form() });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      await stopServer(srv.server);
    }
  });

  it('answers 429 past the concurrent uploads of one principal, and serves others meanwhile', async () => {
    // The stalled uploads must outlive the requests below: their idle timeout is scaled for a slower machine.
    const capped = await startUpload(64 * 1024 * 1024, { idleTimeoutMs: scaled(3000), maxConcurrentPerPrincipal: 2 });
    try {
      const { gid, auth } = newCaller();
      const first = stalledUpload(capped.url, auth);
      const second = stalledUpload(capped.url, auth);
      // Both counted by the server (each has its pending-journal entry, written once its upload runs), not assumed
      // to be after 300 ms.
      await waitFor(async () => (await journal.stale(-60_000)).filter((e) => e.upload.group_id === gid).length === 2, {
        description: 'both stalled uploads running',
      });
      const form = () => {
        const f = new FormData();
        f.append('file', new Blob([Buffer.from('hello')]), 'hello.txt');
        return f;
      };
      const third = await fetch(capped.url, { method: 'POST', headers: auth, body: form() });
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('1');
      expect(((await third.json()) as any).error.code).toBe('RATE_LIMITED');
      // Another user is not held back by the first one's uploads.
      const other = await fetch(capped.url, { method: 'POST', headers: newCaller().auth, body: form() });
      expect(other.status).toBe(200);
      // Once the stalled ones end, the first user may upload again.
      expect((await first).status).toBe(408);
      expect((await second).status).toBe(408);
      expect((await fetch(capped.url, { method: 'POST', headers: auth, body: form() })).status).toBe(200);
    } finally {
      await stopServer(capped.server);
    }
  });

  /** The test's authenticator, counting how often it was asked. */
  function countingAuth(): { authenticate: UploadAppDeps['authenticate']; calls: () => number } {
    const real = createAuthenticator({ jwtSecret: JWT_SECRET, authUrl: 'http://127.0.0.1:9', signer: fx.identities.signer('upload') });
    let calls = 0;
    return {
      authenticate: (req, res, next) => {
        calls += 1;
        return real(req, res, next);
      },
      calls: () => calls,
    };
  }

  /** Sends `n` uploads with a different bogus token and a different spoofed X-Forwarded-For each. */
  async function bogusTokens(target: string, n: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < n; i += 1) {
      const res = await fetch(target, { method: 'POST', headers: { authorization: `Bearer bogus-${i}`, 'x-forwarded-for': `198.51.100.${i}` } });
      await res.body?.cancel();
      statuses.push(res.status);
    }
    return statuses;
  }

  it('answers a flood of bad credentials with 429 before checking them, whatever X-Forwarded-For says', async () => {
    const auth = countingAuth();
    const limited = await startUpload(MAX_UPLOAD_BYTES, { authenticate: auth.authenticate, limits: { authFailuresPerAddress: { perMinute: 6, burst: 3 } } });
    try {
      expect(await bogusTokens(limited.url, 8)).toEqual([401, 401, 401, 429, 429, 429, 429, 429]);
      expect(auth.calls()).toBe(3);
    } finally {
      await stopServer(limited.server);
    }
  });

  it('spends a per-address budget before authenticating, and a spoofed X-Forwarded-For is no new bucket', async () => {
    const auth = countingAuth();
    const limited = await startUpload(MAX_UPLOAD_BYTES, { authenticate: auth.authenticate, limits: { perAddress: { perMinute: 6, burst: 4 } } });
    try {
      const statuses = await bogusTokens(limited.url, 20);
      expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
      expect(new Set(statuses.slice(4))).toEqual(new Set([429]));
      expect(auth.calls()).toBe(4);
      const refused = await fetch(limited.url, { method: 'POST', headers: newCaller().auth });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(WITHIN_A_TOKEN);
      expect(await refused.json()).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String) } });
    } finally {
      await stopServer(limited.server);
    }
  });

  it('limits uploads per principal and per address', async () => {
    const limited = await startUpload(MAX_UPLOAD_BYTES, { limits: { perPrincipal: { perMinute: 6, burst: 2 }, perAddress: { perMinute: 6, burst: 4 } } });
    try {
      const { auth } = newCaller();
      const send = async (headers: Record<string, string>) => {
        const f = new FormData();
        f.append('file', new Blob([Buffer.from('x')]), 'x.txt');
        return (await fetch(limited.url, { method: 'POST', headers, body: f })).status;
      };
      expect([await send(auth), await send(auth), await send(auth)]).toEqual([200, 200, 429]);
      // The address has 1 request left, whoever sends it.
      const other = newCaller().auth;
      expect([await send(other), await send(other)]).toEqual([200, 429]);
    } finally {
      await stopServer(limited.server);
    }
  });

  it('answers 400 VALIDATION_FAILED for a NUL in a file name, a field name or a field value, escaped or not', async () => {
    const { gid, auth } = newCaller();
    const cases: Array<[string, (f: FormData) => void]> = [
      // Raw in a part header (busboy refuses the header; the receiver tells why).
      ['file.filename', (f) => f.append('file', new Blob([Buffer.from('x')]), 'a\u0000.txt')],
      ['field', (f) => f.append('cu\u0000stom', 'x')],
      ['field', (f) => f.append('fi\u0000le', new Blob([Buffer.from('x')]), 'x.txt')],
      // In a value, or in custom_metadata's JSON, raw or with JSON's own escape.
      ['note', (f) => f.append('note', 'a\u0000b')],
      ['custom_metadata', (f) => f.append('custom_metadata', `{"data":{"t":"a${'\u0000'}"}}`)],
      ['custom_metadata.data.t', (f) => f.append('custom_metadata', '{"data":{"t":"a\\u0000b"}}')],
    ];
    for (const [path, add] of cases) {
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('y')]), 'y.txt'); // stored before the bad part arrives
      add(form);
      const res = await fetch(url, { method: 'POST', headers: auth, body: form });
      const body = (await res.json()) as any;
      expect({ status: res.status, code: body.error.code, details: body.error.details }).toEqual({
        status: 400,
        code: 'VALIDATION_FAILED',
        details: [{ path, message: expect.any(String) }],
      });
    }
    // RFC 5987 `filename*`: busboy decodes %00 itself, so the NUL reaches the receiver's own check.
    const boundary = 'nul-boundary';
    const raw = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=utf-8''a%00.txt\r\n\r\nxyz\r\n--${boundary}--\r\n`);
    const encoded = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: raw });
    expect(encoded.status).toBe(400);
    expect(((await encoded.json()) as any).error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'file.filename' }] });
    await new Promise((r) => setTimeout(r, 300));
    expect(await objectsUnder(`originals/${gid}/`)).toEqual([]);
  });
});

describe('upload as a process (main.ts)', () => {
  it('starts from its environment, answers /readyz and uploads through metadata', async () => {
    const upload = await startServiceProcess('upload', {
      ...s3Env(bucket),
      JWT_SECRET,
      SERVICE_KEY: fx.identities.privateKey('upload'),
      METADATA_URL: metadata.url,
      DATABASE_URL: fx.database,
      ...fx.nats.env('upload'),
      AUTH_URL: 'http://127.0.0.1:9',
      LOG_LEVEL: 'warn',
    });
    try {
      const { gid, auth } = newCaller();
      const form = new FormData();
      form.append('file', new Blob([makePng(2, 3)]), 'p.png');
      const res = await fetch(`${upload.url}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: form });
      expect(res.status).toBe(200);
      const { files } = (await res.json()) as any;
      expect(files[0]).toMatchObject({ content_type: 'image/png', metadata: { width: 2, height: 3 } });
      expect(await objectsUnder(`originals/${gid}/`)).toEqual([`originals/${gid}/${files[0].id}`]);
      expect((await fetch(`${upload.url}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: new FormData() })).status).toBe(
        400,
      );

      const metrics = await (await fetch(`${upload.url}/metrics`)).text();
      const svc = { service: 'upload' };
      expect(sampleValue(metrics, 'upload_files_total', svc)).toBe(1);
      expect(sampleValue(metrics, 'upload_bytes_total', svc)).toBe(makePng(2, 3).length);
      expect(sampleValue(metrics, 'upload_duration_seconds_count', { ...svc, outcome: 'ok' })).toBe(1);
      expect(sampleValue(metrics, 'upload_duration_seconds_count', { ...svc, outcome: 'rejected' })).toBe(1);
      const route = { ...svc, method: 'POST', route: '/api/v1/assets/new/content/original/upload' };
      expect(sampleValue(metrics, 'http_request_duration_seconds_count', { ...route, status: '200' })).toBe(1);
      expect(sampleValue(metrics, 'http_request_duration_seconds_count', { ...route, status: '400' })).toBe(1);

      // A video's metadata is in the upload result (ffprobe over a presigned URL of the stored object); a file
      // that only looks like one uploads all the same, with what its first bytes told.
      const video = new FormData();
      video.append('file', new Blob([await makeVideo({ seconds: 2, width: 320, height: 180 })]), 'clip.mp4');
      const broken = Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom'), Buffer.alloc(4096, 1)]);
      video.append('file2', new Blob([broken]), 'broken.mp4');
      const uploaded = await fetch(`${upload.url}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: video });
      expect(uploaded.status).toBe(200);
      const [clip, fake] = ((await uploaded.json()) as any).files;
      expect(clip).toMatchObject({ content_type: 'video/mp4', metadata: { width: 320, height: 180, video_codec: 'h264', audio_codec: 'aac', frame_rate: 25 } });
      expect(clip.metadata.duration).toBeCloseTo(2, 0);
      expect(clip.metadata.bitrate).toBeGreaterThan(0);
      expect(fake).toMatchObject({ content_type: 'video/mp4', metadata: {}, status: 'NOT_READY' });
    } finally {
      await upload.stop();
    }
  });
});
