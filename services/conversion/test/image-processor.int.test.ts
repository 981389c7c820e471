import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { ImageProcessor } from '../src/adapters/image-processor';
import { UnprocessableImageError } from '../src/domain/conversion.errors';

/** A tiny PNG whose header claims `width` x `height`: what a decompression bomb looks like before decoding. */
async function forgedPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } }).png().toBuffer());
  // Signature (8) + IHDR length (4) + "IHDR" (4), then width and height; the chunk CRC covers type + data.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

describe('ImageProcessor (real sharp)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'conversion-test-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('refuses an image over the pixel limit from its header, before decoding', async () => {
    const file = path.join(dir, 'bomb.png');
    await writeFile(file, await forgedPng(60_000, 60_000));
    const started = Date.now();
    const error: unknown = await new ImageProcessor().probe(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableImageError);
    expect((error as Error).message).toMatch(/60000x60000 pixels, more than the limit/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('uses the configured limit and reads the size of an acceptable image', async () => {
    const file = path.join(dir, 'small.png');
    await writeFile(file, await sharp({ create: { width: 20, height: 10, channels: 4, background: '#fff0' } }).png().toBuffer());
    await expect(new ImageProcessor(199).probe(file)).rejects.toBeInstanceOf(UnprocessableImageError);
    await expect(new ImageProcessor(200).probe(file)).resolves.toEqual({ width: 20, height: 10, format: 'png', pages: 1 });
  });

  it('encodes each format at the requested size', async () => {
    const file = path.join(dir, 'src.png');
    await writeFile(file, await sharp({ create: { width: 120, height: 80, channels: 3, background: '#369' } }).png().toBuffer());
    const images = new ImageProcessor();
    for (const format of ['webp', 'jpeg', 'png', 'avif'] as const) {
      const target = path.join(dir, `out.${format}`);
      const out = await images.convert(file, { key: 'k', width: 60, height: null, fit: 'inside', format, quality: 60 }, target);
      expect(out).toMatchObject({ width: 60, height: 40 });
      const meta = await sharp(target).metadata();
      expect(meta.format).toBe(format === 'avif' ? 'heif' : format);
      expect(meta.size ?? out.size).toBe(out.size);
    }
  });
});
