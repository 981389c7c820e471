import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createBucket, startFaultProxy, testS3Config, type FaultProxy } from '@dam/testing';
import { createStorage, type Storage } from '../src';

/** The S3 server reached through a fault proxy that can hold all traffic (a hung server, a partition). */
describe('storage against a hung S3 server', () => {
  const TIMEOUT_MS = 1500;
  let proxy: FaultProxy;
  let storage: Storage;
  const body = randomBytes(4 * 1024 * 1024);

  beforeAll(async () => {
    const config = testS3Config(await createBucket('timeouts'));
    const target = new URL(config.endpoint);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port) });
    storage = createStorage({ ...config, endpoint: `http://${proxy.host}:${proxy.port}`, timeoutMs: TIMEOUT_MS });
    await storage.putBuffer('held', body, { contentType: 'application/octet-stream' });
  });
  afterEach(() => proxy.pass());
  afterAll(() => proxy.stop());

  it('fails a request the server leaves unanswered after the timeout, as a dependency that is unavailable, and works again after', async () => {
    // A kept-alive connection from the put above is reused: its timeout must hold too, not only a new socket's.
    proxy.blackhole();
    const started = Date.now();
    const error = await storage.stat('held').then(
      () => undefined,
      (e: unknown) => e,
    );
    const waited = Date.now() - started;
    expect(error).toMatchObject({ code: 'ETIMEDOUT' });
    expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(waited).toBeLessThan(TIMEOUT_MS * 3);

    await proxy.pass();
    expect((await storage.stat('held'))?.size).toBe(body.length);
  });

  it('fails a first request on a new connection the same way (a server that accepts and then answers nothing)', async () => {
    const fresh = createStorage({ ...testS3Config(storage.bucket), endpoint: `http://${proxy.host}:${proxy.port}`, timeoutMs: TIMEOUT_MS });
    proxy.blackhole();
    const started = Date.now();
    await expect(fresh.getStream('held')).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 3);
  });

  it('fails an upload whose bytes the server stops taking', async () => {
    proxy.blackhole();
    const started = Date.now();
    await expect(storage.putStream('stuck', Readable.from([body, body]), { contentType: 'application/octet-stream' })).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 4);
  });

  it('leaves a download alone while its reader is slow (the socket is idle because we do not read)', async () => {
    const stream = await storage.getStream('held');
    // Read one chunk, then nothing for twice the timeout: the server is fine, we are slow.
    const iterator = stream[Symbol.asyncIterator]();
    const first = (await iterator.next()).value as Buffer;
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
    const chunks: Buffer[] = [first];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) chunks.push(next.value as Buffer);
    expect(Buffer.concat(chunks).equals(body)).toBe(true);
  });

  it('leaves an upload alone while its own source is slow (waiting for our client, not for the server)', async () => {
    const slow = new Readable({ read() {} });
    const put = storage.putStream('slow-source', slow, { contentType: 'application/octet-stream' });
    slow.push(body.subarray(0, 1024));
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
    slow.push(body.subarray(1024));
    slow.push(null);
    await put;
    expect((await storage.stat('slow-source'))?.size).toBe(body.length);
  });
});
