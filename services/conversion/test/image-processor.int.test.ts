import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { scaled } from '@dam/testing';
import { ImageProcessor, SHARED_DECODE_MAX_PIXELS, WEBP_EFFORT } from '../src/adapters/image-processor';
import type { ConversionSpec } from '../src/domain/conversion-spec';
import { UnprocessableImageError } from '../src/domain/conversion.errors';
import { boxForScaled, outputSize, sharedDecodeSize } from '../src/domain/output-size';

/** A tiny PNG whose header claims `width` x `height`: what a decompression bomb looks like before decoding. */
async function forgedPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(
    await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
      .png()
      .toBuffer(),
  );
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
    // Read from the header: decoding 3.6 gigapixels would take far longer, even against a bound for a slower machine.
    expect(Date.now() - started).toBeLessThan(scaled(2000));
  });

  it('uses the configured limit and reads the size of an acceptable image', async () => {
    const file = path.join(dir, 'small.png');
    await writeFile(
      file,
      await sharp({ create: { width: 20, height: 10, channels: 4, background: '#fff0' } })
        .png()
        .toBuffer(),
    );
    await expect(new ImageProcessor(199).probe(file)).rejects.toBeInstanceOf(UnprocessableImageError);
    await expect(new ImageProcessor(200).probe(file)).resolves.toEqual({ width: 20, height: 10, format: 'png', pages: 1, depth: 'uchar' });
  });

  it('encodes each format at the requested size', async () => {
    const file = path.join(dir, 'src.png');
    await writeFile(
      file,
      await sharp({ create: { width: 120, height: 80, channels: 3, background: '#369' } })
        .png()
        .toBuffer(),
    );
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

  it('encodes WebP at effort 2, not libvips default 4 (half the CPU for a few per cent more bytes)', async () => {
    // Noise, so libwebp's search has something to find: effort changes the bytes it writes.
    const noise = Buffer.alloc(160 * 120 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 7919) % 251;
    const file = path.join(dir, 'noise.png');
    await writeFile(
      file,
      await sharp(noise, { raw: { width: 160, height: 120, channels: 3 } })
        .png()
        .toBuffer(),
    );
    const target = path.join(dir, 'effort.webp');
    await new ImageProcessor().convert(file, { key: 'k', width: 100, height: null, fit: 'inside', format: 'webp', quality: 80 }, target);
    const made = await readFile(target);
    const encode = (effort: number) => sharp(file).rotate().resize({ width: 100, fit: 'inside' }).webp({ quality: 80, effort }).toBuffer();
    expect(WEBP_EFFORT).toBe(2);
    expect(made.equals(await encode(2))).toBe(true);
    expect(made.equals(await encode(4))).toBe(false);
  });

  describe('one shared decode', () => {
    // Camera-like pixels: a gradient with structure, so a resize that lost detail or shifted would show.
    const pattern = (width: number, height: number, channels: 3 | 4): Promise<Buffer> => {
      const px = Buffer.alloc(width * height * channels);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const i = (y * width + x) * channels;
          px[i] = (x * 255) / width;
          px[i + 1] = (y * 255) / height;
          px[i + 2] = ((x >> 7) + (y >> 7)) % 2 ? 220 : 40;
          if (channels === 4) px[i + 3] = x < width / 2 ? 255 : 90;
        }
      }
      return sharp(px, { raw: { width, height, channels } }).png().toBuffer();
    };
    const sources: Array<[string, () => Promise<Buffer>]> = [
      [
        'JPEG',
        async () =>
          sharp(await pattern(1600, 1200, 3))
            .jpeg({ quality: 90 })
            .toBuffer(),
      ],
      [
        'JPEG with EXIF orientation 6',
        async () =>
          sharp(await pattern(1600, 1200, 3))
            .jpeg({ quality: 90 })
            .withMetadata({ orientation: 6 })
            .toBuffer(),
      ],
      [
        'CMYK JPEG',
        async () =>
          sharp(await pattern(1200, 900, 3))
            .toColourspace('cmyk')
            .jpeg({ quality: 90 })
            .toBuffer(),
      ],
      [
        'greyscale JPEG',
        async () =>
          sharp(await pattern(1200, 900, 3))
            .greyscale()
            .jpeg({ quality: 90 })
            .toBuffer(),
      ],
      ['PNG with alpha', () => pattern(900, 700, 4)],
      [
        'WebP',
        async () =>
          sharp(await pattern(1000, 800, 3))
            .webp({ quality: 90 })
            .toBuffer(),
      ],
    ];
    const specs: ConversionSpec[] = [
      { key: 'thumb', width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 },
      { key: 'medium', width: 500, height: 500, fit: 'inside', format: 'jpeg', quality: 85 },
      { key: 'banner', width: 480, height: 160, fit: 'cover', format: 'png', quality: 80, position: 'attention' },
      { key: 'narrow', width: 97, height: null, fit: 'cover', format: 'jpeg', quality: 80 },
      { key: 'letterbox', width: 300, height: 300, fit: 'contain', format: 'png', quality: 80 },
      { key: 'wide', width: 333, height: 100, fit: 'outside', format: 'webp', quality: 80 },
      { key: 'same', width: 5000, height: 5000, fit: 'inside', format: 'webp', quality: 80, withoutEnlargement: true },
    ];

    /** Mean absolute difference per sample of two images, decoded to sRGB RGBA at the size of the second. */
    async function difference(a: string, b: string): Promise<number> {
      const { width, height } = await sharp(b).metadata();
      const [x, y] = await Promise.all([a, b].map((f) => sharp(f).resize({ width, height, fit: 'fill' }).ensureAlpha().toColourspace('srgb').raw().toBuffer()));
      expect(x?.length).toBe(y?.length);
      let sum = 0;
      for (let i = 0; i < (x as Buffer).length; i++) sum += Math.abs(((x as Buffer)[i] as number) - ((y as Buffer)[i] as number));
      return sum / (x as Buffer).length;
    }

    it.each(sources)('makes every output of a %s at the size and look of a direct conversion', async (name, make) => {
      const file = path.join(dir, `shared-${name.replace(/\W+/g, '-')}`);
      await writeFile(file, await make());
      const images = new ImageProcessor();
      const image = await images.probe(file);
      const size = sharedDecodeSize(image, specs);
      expect(images.canDecodeOnce(image, size)).toBe(true);
      const decoded = await images.decode(file, image, size, path.join(dir, 'decoded.v'));
      const meta = await sharp(decoded).metadata();
      expect({ width: meta.width, height: meta.height, format: meta.format }).toEqual({ ...size, format: 'vips' });
      for (const spec of specs) {
        const direct = path.join(dir, `direct-${spec.key}.${spec.format}`);
        const viaShared = path.join(dir, `shared-${spec.key}.${spec.format}`);
        const a = await images.convert(file, spec, direct);
        const b = await images.convert(decoded, boxForScaled(spec, outputSize(image, spec)), viaShared);
        // The size `outputSize` predicts; a direct conversion of a one-sided box may round its free side the
        // other way after a shrink-on-load.
        expect({ key: spec.key, width: b.width, height: b.height }).toEqual({ key: spec.key, ...outputSize(image, spec) });
        expect(Math.abs(a.width - b.width) + Math.abs(a.height - b.height)).toBeLessThanOrEqual(1);
        // Lossy encoders on slightly different resamplings: 0-2.3 levels of 255 on average when the sizes agree
        // (seen); a row more or less moves every sample a little (up to 6.7 seen, on the CMYK source).
        const bound = a.width === b.width && a.height === b.height ? 3 : 8;
        expect({ key: spec.key, close: (await difference(direct, viaShared)) < bound }).toEqual({ key: spec.key, close: true });
      }
    });

    it('is not used for animated, 16-bit or very large originals, which each output reads as before', async () => {
      const images = new ImageProcessor();
      const frame = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#f00' } })
        .png()
        .toBuffer();
      const animated = await sharp([frame, frame], { join: { animated: true } })
        .gif({ delay: [100, 100], loop: 0 })
        .toBuffer();
      const deep = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#0f0' } })
        .toColourspace('rgb16')
        .png()
        .toBuffer();
      const tiff = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#00f' } })
        .tiff()
        .toBuffer();
      const small = { width: 40, height: 30 };
      expect(images.canDecodeOnce(await images.probe(animated), small)).toBe(false);
      expect(images.canDecodeOnce(await images.probe(deep), small)).toBe(false);
      expect(images.canDecodeOnce(await images.probe(tiff), small)).toBe(false);
      const jpeg = await images.probe(await sources[0]![1]());
      expect(images.canDecodeOnce(jpeg, { width: 4000, height: SHARED_DECODE_MAX_PIXELS / 4000 })).toBe(true);
      expect(images.canDecodeOnce(jpeg, { width: 4000, height: SHARED_DECODE_MAX_PIXELS / 4000 + 1 })).toBe(false);
    });
  });
});
