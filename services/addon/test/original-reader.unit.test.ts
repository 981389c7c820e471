import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { originalReader, OriginalTooLarge } from '../src/adapters/original-reader';

/** An object store of a few objects, counting whole reads (the cache's) and streams. */
function store(objects: Record<string, Buffer>, failStream = false) {
  const calls = { buffers: 0, streams: 0 };
  const storage = {
    stat: async (key: string) => (objects[key] ? { size: objects[key].length, etag: 'e', contentType: 'image/png', lastModified: new Date() } : null),
    getStream: async (key: string) => {
      calls.streams += 1;
      if (failStream)
        return new Readable({
          read() {
            this.destroy(new Error('connection reset'));
          },
        });
      return Readable.from([objects[key]!.subarray(0, 10), objects[key]!.subarray(10)]);
    },
  };
  const cached = async (key: string) => {
    calls.buffers += 1;
    const bytes = objects[key];
    if (!bytes) throw new Error(`no object ${key}`);
    return bytes;
  };
  return { storage, cached, calls };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'original-reader-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('originalReader (security review F7: a large original is never read whole into memory)', () => {
  const small = Buffer.alloc(100, 1);
  const large = Buffer.alloc(5000, 2);
  const options = () => ({ inMemoryBytes: 1000, maxBytes: 10_000, dir });

  it('reads a small original into memory, through the cache', async () => {
    const { storage, cached, calls } = store({ s: small });
    const original = await originalReader(storage, cached, options())('s', 'c');
    expect(original.input).toBe(small);
    await original.release();
    expect(calls).toEqual({ buffers: 1, streams: 0 });
  });

  it('streams a larger one to a file of its own, removed on release', async () => {
    const { storage, cached, calls } = store({ l: large });
    const original = await originalReader(storage, cached, options())('l', 'c');
    expect(typeof original.input).toBe('string');
    expect(readFileSync(original.input as string)).toEqual(large);
    expect(calls).toEqual({ buffers: 0, streams: 1 });
    await original.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses one over the limit unread, with its size', async () => {
    const { storage, cached, calls } = store({ h: Buffer.alloc(20_000) });
    await expect(originalReader(storage, cached, options())('h', 'c')).rejects.toEqual(
      new OriginalTooLarge('the original is 20000 bytes, above the 10000 bytes an addon reads'),
    );
    expect(calls).toEqual({ buffers: 0, streams: 0 });
  });

  it('leaves no file behind when the stream fails, and a missing object fails as the read did', async () => {
    const { storage, cached } = store({ l: large }, true);
    await expect(originalReader(storage, cached, options())('l', 'c')).rejects.toThrow('connection reset');
    expect(readdirSync(dir)).toEqual([]);
    await expect(originalReader(storage, cached, options())('missing', 'c')).rejects.toThrow('no object missing');
  });
});
