import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { ByteCache } from '../src/adapters/byte-cache';

let dir: string;
beforeEach(async () => {
  dir = path.join(await mkdtemp(path.join(tmpdir(), 'byte-cache-')), 'cache');
});
afterEach(async () => rm(path.dirname(dir), { recursive: true, force: true }));

const entry = (objectKey: string, size: number, assetId = 'A') => ({ key: ByteCache.keyOf(objectKey, 'e1'), objectKey, assetId, size });

describe('ByteCache', () => {
  it('stores a whole object, then hits; a short or failed stream keeps nothing', async () => {
    const cache = new ByteCache(dir, 1000, 1000);
    await cache.init();
    const stored = await cache.fillFrom(entry('o/1', 5), async () => Readable.from([Buffer.from('hello')]));
    expect(stored && (await readFile(stored.file, 'utf8'))).toBe('hello');
    expect(cache.lookup(ByteCache.keyOf('o/1', 'e1'))).toBeDefined();
    expect(await cache.fillFrom(entry('o/2', 10), async () => Readable.from([Buffer.from('short')]))).toBeUndefined();
    const failing = new PassThrough();
    const pending = cache.fillFrom(entry('o/3', 10), async () => failing);
    await new Promise((r) => setImmediate(r)); // the fill has opened its source and is writing
    failing.write('abc');
    failing.destroy(new Error('upstream cut'));
    expect(await pending).toBeUndefined();
    expect((await readdir(dir)).length).toBe(1); // no half-written files left
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 5, hits: 1 });
  });

  it('makes one upstream read for concurrent fills of one object', async () => {
    const cache = new ByteCache(dir, 1000, 1000);
    await cache.init();
    let opened = 0;
    const open = async () => {
      opened += 1;
      await new Promise((r) => setTimeout(r, 20));
      return Readable.from([Buffer.from('0123456789')]);
    };
    let streamed = 0;
    const results = await Promise.all(Array.from({ length: 10 }, () => cache.fillFrom(entry('o/big', 10), open, () => (streamed += 1))));
    expect(opened).toBe(1);
    expect(streamed).toBe(1); // only the opener gets the stream to serve its client
    expect(new Set(results.map((r) => r?.file)).size).toBe(1);
    expect(await cache.fillFrom(entry('o/big', 10), open)).toBeDefined();
    expect(opened).toBe(1);
  });

  it('drops the least recently used beyond its size, refuses objects over the per-object cap, and evicts by asset', async () => {
    const cache = new ByteCache(dir, 10, 6);
    await cache.init();
    await cache.fillFrom(entry('o/a', 4, 'A'), async () => Readable.from([Buffer.from('aaaa')]));
    await cache.fillFrom(entry('o/b', 4, 'B'), async () => Readable.from([Buffer.from('bbbb')]));
    cache.lookup(ByteCache.keyOf('o/a', 'e1')); // a is now the most recent
    await cache.fillFrom(entry('o/c', 4, 'C'), async () => Readable.from([Buffer.from('cccc')]));
    expect(cache.has(ByteCache.keyOf('o/b', 'e1'))).toBe(false);
    expect(cache.has(ByteCache.keyOf('o/a', 'e1'))).toBe(true);
    expect(cache.cacheable(7)).toBe(false);
    expect(await cache.fillFrom(entry('o/d', 7), async () => Readable.from([Buffer.from('ddddddd')]))).toBeUndefined();
    expect(cache.evictAsset('A')).toBe(1);
    expect(cache.holds('o/a')).toBe(false);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 4, evictions: 1 });
  });
});
