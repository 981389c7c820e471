import { boxForScaled, orientedSize, outputSize, resizeScale, sharedDecodeSize } from '../src/domain/output-size';

// Expected values were checked against sharp 0.35's resize for the same inputs.
describe('outputSize', () => {
  it.each([
    [333, 197, 100, 100, 'inside', 100, 59],
    [333, 197, 100, 100, 'outside', 169, 100],
    [197, 333, 64, 50, 'inside', 30, 50],
    [1001, 667, 250, null, 'cover', 250, 167],
    [1001, 667, null, 77, 'inside', 116, 77],
    [50, 30, 200, 200, 'inside', 200, 120],
    [3000, 1, 100, 100, 'inside', 100, 1],
    [640, 480, 200, 200, 'cover', 200, 200],
    [640, 480, 200, 100, 'contain', 200, 100],
    [640, 480, 30, 300, 'fill', 30, 300],
  ] as const)('%ix%i into %sx%s %s → %ix%i', (sw, sh, bw, bh, fit, w, h) => {
    expect(outputSize({ width: sw, height: sh }, { width: bw, height: bh, fit })).toEqual({ width: w, height: h });
  });

  it('keeps the source size without a box and rejects an empty source', () => {
    expect(outputSize({ width: 10, height: 20 }, { width: null, height: null, fit: 'cover' })).toEqual({ width: 10, height: 20 });
    expect(() => outputSize({ width: 0, height: 20 }, { width: 5, height: 5, fit: 'cover' })).toThrow(RangeError);
  });
});

describe('orientedSize', () => {
  it('swaps width and height for EXIF orientations 5-8 only', () => {
    const size = { width: 40, height: 30 };
    expect(orientedSize(size, undefined)).toEqual(size);
    for (const o of [1, 2, 3, 4]) expect(orientedSize(size, o)).toEqual(size);
    for (const o of [5, 6, 7, 8]) expect(orientedSize(size, o)).toEqual({ width: 30, height: 40 });
  });
});

describe('one shared decode', () => {
  const source = { width: 4000, height: 3000 };
  it.each([
    [200, 200, 'cover', 200 / 3000],
    [200, 200, 'outside', 200 / 3000],
    [200, 200, 'inside', 200 / 4000],
    [200, 200, 'contain', 200 / 4000],
    [100, 600, 'fill', 600 / 3000],
    [800, null, 'cover', 800 / 4000],
    [null, 300, 'inside', 300 / 3000],
    [null, null, 'inside', 1],
    [8000, 8000, 'inside', 2],
  ] as const)('a %sx%s %s box uses %f of the source', (width, height, fit, scale) => {
    expect(resizeScale(source, { width, height, fit })).toBeCloseTo(scale, 10);
  });

  it('never asks for more than the source when enlarging is not allowed', () => {
    expect(resizeScale(source, { width: 8000, height: 8000, fit: 'inside', withoutEnlargement: true })).toBe(1);
  });

  it('decodes at the largest scale any box uses, at most the source size', () => {
    expect(
      sharedDecodeSize(source, [
        { width: 200, height: 200, fit: 'cover' },
        { width: 100, height: 100, fit: 'inside' },
      ]),
    ).toEqual({ width: 267, height: 200 });
    expect(
      sharedDecodeSize(source, [
        { width: 200, height: 200, fit: 'cover' },
        { width: 1600, height: 1600, fit: 'inside' },
      ]),
    ).toEqual({ width: 1600, height: 1200 });
    expect(sharedDecodeSize(source, [{ width: 9000, height: null, fit: 'cover' }])).toEqual(source);
    expect(sharedDecodeSize({ width: 3, height: 1000 }, [{ width: 1, height: 1, fit: 'inside' }])).toEqual({ width: 1, height: 1 });
  });

  it('asks scaled pixels for the exact size where the size follows the aspect ratio', () => {
    const expected = { width: 97, height: 73 };
    expect(boxForScaled({ width: 97, height: null, fit: 'cover' as const }, expected)).toEqual({
      width: 97,
      height: 73,
      fit: 'fill',
      withoutEnlargement: false,
    });
    expect(boxForScaled({ width: 500, height: 500, fit: 'inside' as const, withoutEnlargement: true }, { width: 500, height: 375 })).toEqual({
      width: 500,
      height: 375,
      fit: 'fill',
      withoutEnlargement: false,
    });
    const cover = { width: 200, height: 200, fit: 'cover' as const };
    expect(boxForScaled(cover, { width: 200, height: 200 })).toBe(cover);
  });
});
