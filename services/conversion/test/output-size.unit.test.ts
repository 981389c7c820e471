import { orientedSize, outputSize } from '../src/domain/output-size';

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
