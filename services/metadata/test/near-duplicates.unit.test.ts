import { randomBytes } from 'node:crypto';
import { bandsOf, MAX_BAND_RADIUS, similarLookup, withinBits } from '../src/domain/near-duplicates';

const popcount = (v: number): number => v.toString(2).replace(/0/g, '').length;
const randomHash = (): string => randomBytes(8).toString('hex');
/** `hash` with `n` distinct random bits flipped. */
function flipBits(hash: string, n: number): string {
  const bits = new Set<number>();
  while (bits.size < n) bits.add(Math.floor(Math.random() * 64));
  let v = BigInt(`0x${hash}`);
  for (const b of bits) v ^= 1n << BigInt(b);
  return v.toString(16).padStart(16, '0');
}

describe('withinBits', () => {
  it('lists each value within the radius once, and nothing farther', () => {
    for (const [radius, count] of [
      [0, 1],
      [1, 17],
      [2, 137],
      [3, 697],
      [4, 2517],
    ] as const) {
      const values = withinBits(0xa5c3, radius);
      expect(values).toHaveLength(count);
      expect(new Set(values).size).toBe(count);
      for (const v of values) {
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThan(65536);
        expect(popcount(v ^ 0xa5c3)).toBeLessThanOrEqual(radius);
      }
    }
  });
});

describe('similarLookup', () => {
  it('gives the hash as a signed 64-bit number and its four bands', () => {
    expect(similarLookup('ffffffffffffffff', 0).hash).toBe('-1');
    expect(similarLookup('7fffffffffffffff', 0).hash).toBe('9223372036854775807');
    expect(bandsOf('0001000200030004')).toEqual([1, 2, 3, 4]);
    expect(similarLookup('0001000200030004', 3).bands).toEqual([[1], [2], [3], [4]]);
  });

  it('always finds a hash within the distance among the candidates (pigeonhole over the bands)', () => {
    for (let maxDistance = 0; maxDistance <= 4 * MAX_BAND_RADIUS + 3; maxDistance++) {
      for (let i = 0; i < 40; i++) {
        const a = randomHash();
        const b = flipBits(a, Math.floor(Math.random() * (maxDistance + 1)));
        const { bands } = similarLookup(a, maxDistance);
        expect(bands).not.toBeNull();
        const theirs = bandsOf(b);
        expect(bands!.some((values, band) => values.includes(theirs[band]!))).toBe(true);
      }
    }
  });

  it('reads the whole group past the widest band radius', () => {
    expect(similarLookup(randomHash(), 4 * (MAX_BAND_RADIUS + 1)).bands).toBeNull();
    expect(similarLookup(randomHash(), 32).bands).toBeNull();
  });
});
