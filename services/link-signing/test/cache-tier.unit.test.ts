import { createServer, type Server } from 'node:http';
import { createLogger } from '@dam/logging';
import { listen } from '@dam/testing';
import { CacheTier, tierMayKeep, tierObjectsOf } from '../src/adapters/cache-tier';
import { edgeFormat } from '../src/use-cases/serve-delivery.use-case';

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
    tier.record(key(A), A, [`1/${A}/original`], 300);
    tier.record(key(A, 'key=original&sig=1', 'bytes=1048576-2097151'), A, [`1/${A}/original`], 300);
    tier.record(key(A, 'key=original&sig=2'), A, [`1/${A}/original`], 300);
    tier.record(key(B), B, [`1/${B}/original`], 300);
    expect(await tier.purge({ assetIds: [A] })).toBe(3);
    expect(received).toHaveLength(1);
    expect(received[0]?.sort()).toEqual([key(A), key(A, 'key=original&sig=1', 'bytes=1048576-2097151'), key(A, 'key=original&sig=2')].sort());
    // Purged keys are forgotten: a second purge sends nothing.
    expect(await tier.purge({ assetIds: [A] })).toBe(0);
  });

  it('purges by object key and by folder prefix', async () => {
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger });
    tier.record(key(A, 'key=hls'), A, [`1/${A}/hls/seg0.ts`], 300);
    tier.record(`/api/v1/files/content/${A}/seg1.ts?key=hls`, A, [`1/${A}/hls/seg1.ts`], 300);
    tier.record(key(A), A, [`1/${A}/original`], 300);
    expect(await tier.purge({ objectKeys: [`1/${A}/hls/`] })).toBe(2);
    expect(await tier.purge({ objectKeys: [`1/${A}/original`] })).toBe(1);
  });

  it("purges a transformed link's keys by the object it was made from, by its own object and by its asset", async () => {
    // Issue 33: a CDN purge job naming the key (a plain or a transformed link of it) evicts the key's object; the
    // tier's keys of its transforms were remembered under the variant alone, so they stayed until their max-age.
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger });
    const source = `originals/1/${A}/photo.png`;
    const variant = (n: number) => `conversions/1/${A}/sum/_t/${String(n).repeat(32)}.webp`;
    const transformed = (q: string, n: number) => tier.record(key(A, q), A, [variant(n), source], 300);
    transformed('w=64&sig=1', 1);
    transformed('w=48&format=auto&sig=2', 2);
    tier.record(key(A, 'w=48&format=auto&sig=2', `bytes=0-1048575 accept=avif`), A, [variant(3), source], 300);
    tier.record(key(A), A, [source], 300);
    tier.record(key(A, 'key=thumbnail'), A, [`conversions/1/${A}/sum/thumbnail.jpg`], 300);
    expect(await tier.purge({ objectKeys: [source] })).toBe(4);
    expect(received[0]?.sort()).toEqual(
      [key(A, 'w=64&sig=1'), key(A, 'w=48&format=auto&sig=2'), key(A, 'w=48&format=auto&sig=2', 'bytes=0-1048575 accept=avif'), key(A)].sort(),
    );
    transformed('w=64&sig=1', 1);
    expect(await tier.purge({ objectKeys: [variant(1)] })).toBe(1);
    transformed('w=64&sig=1', 1);
    expect(await tier.purge({ assetIds: [A] })).toBe(2);
  });

  it("names what an edge answer was made of: the object served and a transform's source", () => {
    expect(tierObjectsOf(undefined)).toEqual([]);
    expect(tierObjectsOf({ objectKey: 'o', target: {} })).toEqual(['o']);
    expect(tierObjectsOf({ objectKey: 'v', target: { source_object_key: 'o' } })).toEqual(['v', 'o']);
  });

  it('lets the tier keep a format=auto answer only under a key naming the Accept class it was made for', () => {
    const auto = key(A, 'w=48&format=auto&sig=2');
    expect(tierMayKeep(auto, undefined)).toBe(true); // not format=auto: any key
    expect(tierMayKeep(`${auto} accept=avif`, 'avif')).toBe(true);
    expect(tierMayKeep(`${auto} accept=other`, 'other')).toBe(true);
    expect(tierMayKeep(`${auto} accept=webp`, 'avif')).toBe(false);
    expect(tierMayKeep(auto, 'webp')).toBe(false); // nginx did not see format=auto (e.g. format=%61uto)
  });

  it("reads Accept into the class deploy/cache's map puts it in (deploy/test/cdn-cache-vary.unit.test.ts has nginx's side)", () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'other'],
      ['*/*', 'other'],
      ['image/*', 'other'],
      ['IMAGE/AVIF', 'avif'],
      ['image/avif;q=0.5, image/webp', 'avif'],
      ['image/avif;q=0, image/webp', 'webp'],
      ['image/avif ; q=0.0,image/webp;q=0,*/*', 'other'],
      ['image/webp', 'webp'],
      ['image/avifx,image/webpx', 'other'],
    ];
    for (const [accept, cls] of cases) expect([accept, edgeFormat('auto', accept) ?? 'other']).toEqual([accept, cls]);
  });

  it("ignores a key that does not name the request's asset, and forgets keys past their max-age", async () => {
    let now = 1_000_000;
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, now: () => now });
    tier.record(key(B), A, [], 300); // another asset's key sent with A's request
    tier.record('/elsewhere?x', A, [], 300);
    tier.record(key(A), A, [], 0); // not kept downstream: nothing to purge later
    expect(tier.size).toBe(0);
    tier.record(key(A), A, [], 10);
    now += 10_000 + 5001; // past max-age and the margin: the tier asks the edge again by itself
    expect(await tier.purge({ assetIds: [A] })).toBe(0);
    expect(received).toHaveLength(0);
  });

  it('keeps at most maxKeys, forgetting the oldest', async () => {
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, maxKeys: 2 });
    for (const q of ['a', 'b', 'c']) tier.record(key(A, q), A, [], 300);
    expect(tier.size).toBe(2);
    // An asset's purge looks at its own keys (an index kept with them): the forgotten one is not among them.
    tier.record(key(B), B, [], 300);
    expect(await tier.purge({ assetIds: [A] })).toBe(1);
    expect(received).toEqual([[key(A, 'c')]]);
    expect(await tier.purge({ assetIds: [B] })).toBe(1);
    expect(tier.size).toBe(0);
  });
});

describe('CacheTier: the second purge', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('purges again, a second later, only what was fetched from a lookup begun before the purge', async () => {
    let now = 5_000_000;
    const tier = new CacheTier({ purgeUrls: [purgeUrl], logger, now: () => now });
    tier.record(key(A), A, [], 300, now);
    expect(await tier.purge({ assetIds: [A] })).toBe(1);
    // Fetched after the purge: one from a lookup begun before it (old bytes), one from a later lookup.
    tier.record(key(A, 'stale'), A, [], 300, now - 10);
    tier.record(key(A, 'fresh'), A, [], 300, now + 10);
    now += 1000;
    jest.advanceTimersByTime(1000);
    jest.useRealTimers();
    await new Promise((r) => setTimeout(r, 200));
    expect(received).toEqual([[key(A)], [key(A, 'stale')]]);
    expect(tier.size).toBe(1);
  });
});
