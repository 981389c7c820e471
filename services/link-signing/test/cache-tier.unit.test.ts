import { createServer, type Server } from 'node:http';
import { createLogger } from '@dam/logging';
import { listen } from '@dam/testing';
import { CacheTier } from '../src/adapters/cache-tier';

/** Issue 33: the edge remembers the keys the nginx tier fetched and purges an asset's or an object's from it. */
const logger = createLogger({ service: 'link-signing', level: 'silent' });
const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const key = (id: string, q = 'key=original&sig=1', slice = 'bytes=0-1048575') => `/api/v1/files/content/${id}?${q}${slice}`;

let server: Server;
let purgeUrl: string;
const received: string[][] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(body.split('\n'));
      res.writeHead(200).end('{}');
    });
  });
  purgeUrl = `${await listen(server)}/purge`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  received.length = 0;
});

describe('CacheTier', () => {
  it("purges an asset's keys, every slice and link, and only those", async () => {
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger });
    tier.record(key(A), A, `1/${A}/original`, 300);
    tier.record(key(A, 'key=original&sig=1', 'bytes=1048576-2097151'), A, `1/${A}/original`, 300);
    tier.record(key(A, 'key=original&sig=2'), A, `1/${A}/original`, 300);
    tier.record(key(B), B, `1/${B}/original`, 300);
    expect(await tier.purge({ assetIds: [A] })).toBe(3);
    expect(received).toHaveLength(1);
    expect(received[0]?.sort()).toEqual([key(A), key(A, 'key=original&sig=1', 'bytes=1048576-2097151'), key(A, 'key=original&sig=2')].sort());
    // Purged keys are forgotten: a second purge sends nothing.
    expect(await tier.purge({ assetIds: [A] })).toBe(0);
  });

  it('purges by object key and by folder prefix', async () => {
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger });
    tier.record(key(A, 'key=hls'), A, `1/${A}/hls/seg0.ts`, 300);
    tier.record(`/api/v1/files/content/${A}/seg1.ts?key=hls`, A, `1/${A}/hls/seg1.ts`, 300);
    tier.record(key(A), A, `1/${A}/original`, 300);
    expect(await tier.purge({ objectKeys: [`1/${A}/hls/`] })).toBe(2);
    expect(await tier.purge({ objectKeys: [`1/${A}/original`] })).toBe(1);
  });

  it("ignores a key that does not name the request's asset, and forgets keys past their max-age", async () => {
    let now = 1_000_000;
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, now: () => now });
    tier.record(key(B), A, undefined, 300); // another asset's key sent with A's request
    tier.record('/elsewhere?x', A, undefined, 300);
    tier.record(key(A), A, undefined, 0); // not kept downstream: nothing to purge later
    expect(tier.size).toBe(0);
    tier.record(key(A), A, undefined, 10);
    now += 10_000 + 5001; // past max-age and the margin: the tier asks the edge again by itself
    expect(await tier.purge({ assetIds: [A] })).toBe(0);
    expect(received).toHaveLength(0);
  });

  it('keeps at most maxKeys, forgetting the oldest', () => {
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, maxKeys: 2 });
    for (const q of ['a', 'b', 'c']) tier.record(key(A, q), A, undefined, 300);
    expect(tier.size).toBe(2);
  });
});

describe('CacheTier: the second purge', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('purges again, a second later, only what was fetched from a lookup begun before the purge', async () => {
    let now = 5_000_000;
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, now: () => now });
    tier.record(key(A), A, undefined, 300, now);
    expect(await tier.purge({ assetIds: [A] })).toBe(1);
    // Fetched after the purge: one from a lookup begun before it (old bytes), one from a later lookup.
    tier.record(key(A, 'stale'), A, undefined, 300, now - 10);
    tier.record(key(A, 'fresh'), A, undefined, 300, now + 10);
    now += 1000;
    jest.advanceTimersByTime(1000);
    jest.useRealTimers();
    await new Promise((r) => setTimeout(r, 200));
    expect(received).toEqual([[key(A)], [key(A, 'stale')]]);
    expect(tier.size).toBe(1);
  });
});
