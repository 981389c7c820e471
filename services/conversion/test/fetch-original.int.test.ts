import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fetchOriginal } from '../src/use-cases/convert-asset.use-case';

describe('fetchOriginal', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'fetch-original-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const chunks = (n: number, size: number) => Array.from({ length: n }, (_, i) => Buffer.alloc(size, i));

  it('keeps a small original in memory', async () => {
    const parts = chunks(4, 1000);
    const got = await fetchOriginal(Readable.from(parts), path.join(dir, 'small'), 10_000);
    expect(Buffer.isBuffer(got) && got.equals(Buffer.concat(parts))).toBe(true);
  });

  it('spools a large one to the file, the chunks read so far first, byte for byte', async () => {
    const parts = chunks(10, 1000);
    const file = path.join(dir, 'large');
    expect(await fetchOriginal(Readable.from(parts), file, 2_500)).toBe(file);
    expect(readFileSync(file).equals(Buffer.concat(parts))).toBe(true);
  });

  it('passes a failing stream on as an error', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(fetchOriginal(failing, path.join(dir, 'failing'), 10)).rejects.toThrow('connection reset');
  });
});
