import { cachedOriginals } from '../src/adapters/originals-cache';

/** A stand-in for the object store: counts reads per key; `gate` holds reads until released. */
function store(objects: Record<string, Buffer>) {
  const reads: string[] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> | undefined;
  return {
    reads,
    hold() {
      gate = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    read: async (key: string): Promise<Buffer> => {
      reads.push(key);
      if (gate) await gate;
      const bytes = objects[key];
      if (!bytes) throw Object.assign(new Error(`no such key ${key}`), { code: 'NoSuchKey' });
      return bytes;
    },
  };
}

const KB = 1024;

describe('the addon cache of originals', () => {
  it('reads an original once for every job on it, and again when its checksum changes', async () => {
    const s = store({ a: Buffer.alloc(10 * KB, 1) });
    const read = cachedOriginals(s.read, { maxBytes: 100 * KB, ttlMs: 60_000 });
    const first = await read('a', 'sum-1');
    expect(await read('a', 'sum-1')).toBe(first);
    expect(s.reads).toEqual(['a']);
    await read('a', 'sum-2'); // the original was replaced: its bytes are read again
    expect(s.reads).toEqual(['a', 'a']);
  });

  it('lets jobs that ask at once share one read', async () => {
    const s = store({ a: Buffer.alloc(10 * KB, 1) });
    const read = cachedOriginals(s.read, { maxBytes: 100 * KB, ttlMs: 60_000 });
    s.hold();
    const both = Promise.all([read('a', 'x'), read('a', 'x')]);
    await new Promise((r) => setImmediate(r));
    s.release();
    const [one, two] = await both;
    expect(one).toBe(two);
    expect(s.reads).toEqual(['a']);
  });

  it('keeps no failed read: the next job reads again and gets the error again', async () => {
    const s = store({});
    const read = cachedOriginals(s.read, { maxBytes: 100 * KB, ttlMs: 60_000 });
    await expect(read('gone', 'x')).rejects.toMatchObject({ code: 'NoSuchKey' });
    await expect(read('gone', 'x')).rejects.toMatchObject({ code: 'NoSuchKey' });
    expect(s.reads).toEqual(['gone', 'gone']);
  });

  it('stays within its bytes, dropping the least recently used, and keeps no original over a quarter of them', async () => {
    const twenty = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => [k, Buffer.alloc(20 * KB)]));
    const s = store({ ...twenty, big: Buffer.alloc(30 * KB) });
    const read = cachedOriginals(s.read, { maxBytes: 100 * KB, ttlMs: 60_000 });
    expect((await read('big', 'x')).length).toBe(30 * KB); // answered, not kept
    await read('big', 'x');
    expect(s.reads).toEqual(['big', 'big']);
    for (const k of ['a', 'b', 'c', 'd', 'e']) await read(k, 'x'); // 5 × 20 KB: full
    await read('a', 'x'); // a used again: b is now the least recently used
    await read('f', 'x'); // a sixth: b goes
    s.reads.length = 0;
    for (const k of ['a', 'c', 'd', 'e', 'f']) await read(k, 'x');
    expect(s.reads).toEqual([]);
    await read('b', 'x');
    expect(s.reads).toEqual(['b']);
  });

  it('reads an original again once it was kept longer than the TTL', async () => {
    const s = store({ a: Buffer.alloc(KB) });
    const read = cachedOriginals(s.read, { maxBytes: 100 * KB, ttlMs: 300 });
    await read('a', 'x');
    await read('a', 'x');
    expect(s.reads).toEqual(['a']);
    await new Promise((r) => setTimeout(r, 400));
    await read('a', 'x');
    expect(s.reads).toEqual(['a', 'a']);
  });

  it('with no bytes to keep, reads the object store for every job', async () => {
    const s = store({ a: Buffer.alloc(KB) });
    const read = cachedOriginals(s.read, { maxBytes: 0, ttlMs: 60_000 });
    await read('a', 'x');
    await read('a', 'x');
    expect(s.reads).toEqual(['a', 'a']);
  });
});
