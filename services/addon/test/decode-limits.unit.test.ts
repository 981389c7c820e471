import { decodeSizeOf, ImageRefused, type ImageHeader } from '../src/domain/decode-limits';

const limits = { maxInputPixels: 268_402_689, maxDecodePixels: 40_000_000 };
const header = (width: number, height: number, format = 'png', progressive = false): ImageHeader => ({ format, width, height, progressive });

describe('decodeSizeOf (security review F7: decode shrunk, refuse before decoding)', () => {
  it('keeps an image within the target at its own size', () => {
    expect(decodeSizeOf(header(6000, 4000, 'jpeg'), limits)).toEqual({ width: 6000, height: 4000, shrunk: false });
    expect(decodeSizeOf(header(4000, 5000, 'heif'), limits, 25_000_000)).toEqual({ width: 4000, height: 5000, shrunk: false });
  });

  it('shrinks what is read row by row to the target, at most MAX_DECODE_PIXELS, its aspect kept', () => {
    const square = decodeSizeOf(header(16_383, 16_383), limits);
    expect(square).toMatchObject({ width: square.height, shrunk: true });
    expect(square.width * square.height).toBeLessThanOrEqual(40_000_000);
    expect(square.width * square.height).toBeGreaterThan(39_900_000);
    const wide = decodeSizeOf(header(30_000, 5_000, 'jpeg'), limits, 25_000_000);
    expect(wide.width * wide.height).toBeLessThanOrEqual(25_000_000);
    expect(wide.width / wide.height).toBeCloseTo(6, 2);
    // A target above the decode limit does not raise it.
    expect(decodeSizeOf(header(10_000, 10_000, 'webp'), limits, 90_000_000).width).toBe(6324);
  });

  it('refuses an image over MAX_INPUT_PIXELS, or without a size, with the reason', () => {
    expect(() => decodeSizeOf(header(20_000, 14_000), limits)).toThrow(
      new ImageRefused('the image is 20000×14000 (280 MP), above the 268.4 MP an addon reads'),
    );
    expect(() => decodeSizeOf(header(0, 10), limits)).toThrow(/no size/);
  });

  it('refuses a kind decoded whole (progressive JPEG, interlaced PNG, HEIF, TIFF, GIF) past MAX_DECODE_PIXELS', () => {
    expect(() => decodeSizeOf(header(8000, 6000, 'jpeg', true), limits)).toThrow(
      'a progressive JPEG of 8000×6000 (48 MP): images of this kind are decoded whole',
    );
    expect(() => decodeSizeOf(header(7000, 7000, 'png', true), limits)).toThrow('an interlaced PNG of 7000×7000 (49 MP)');
    for (const [format, name] of [
      ['heif', 'HEIF/AVIF'],
      ['tiff', 'TIFF'],
      ['gif', 'GIF'],
      ['fits', 'FITS'],
    ] as const) {
      expect(() => decodeSizeOf(header(8000, 6000, format), limits)).toThrow(`a ${name} image of 8000×6000 (48 MP)`);
    }
    // At the limit they are read, shrunk further when the addon wants less.
    expect(decodeSizeOf(header(8000, 5000, 'tiff'), limits, 25_000_000)).toMatchObject({ shrunk: true });
  });
});
