/**
 * Near-duplicates (CONTRACT §14) by multi-index hashing: the 64-bit perceptual hash is cut into four 16-bit
 * bands (indexed columns). Two hashes within `d` bits differ by at most floor(d / 4) bits in at least one band,
 * so the candidates are the assets whose band equals one of that band's neighbours within floor(d / 4) bits;
 * only they get the exact distance computed.
 */
export const PHASH_PATTERN = /^[0-9a-f]{16}$/;
const BANDS = 4;
const BAND_BITS = 16;
/**
 * The largest band radius worth the index lookups: radius 2 is 137 of 65,536 values per band (548 lookups, about
 * 0.8 % of the group as candidates). Measured at 100,000 assets (bench/similar.bench.ts): radius 2 (distance 8)
 * 1.9 ms against 11 ms reading the group; radius 3 (697 values per band) 14 ms and radius 4 19 ms, both slower
 * than reading the group. So distances up to 11 use the bands, wider ones read the group.
 */
export const MAX_BAND_RADIUS = 2;

/** The four 16-bit bands of a hash, most significant first (the columns `phash_b0` to `phash_b3`). */
export function bandsOf(phash: string): number[] {
  return Array.from({ length: BANDS }, (_, i) => parseInt(phash.slice(i * 4, i * 4 + 4), 16));
}

/** Every value of `bits` bits within `radius` bits of `value` (itself included), each once. */
export function withinBits(value: number, radius: number, bits = BAND_BITS): number[] {
  const out: number[] = [];
  const flip = (v: number, from: number, left: number): void => {
    out.push(v);
    if (left === 0) return;
    for (let bit = from; bit < bits; bit++) flip(v ^ (1 << bit), bit + 1, left - 1);
  };
  flip(value, 0, radius);
  return out;
}

export interface SimilarLookup {
  /** The hash as PostgreSQL's signed bigint, in decimal (the column `phash`). */
  hash: string;
  /** Per band, the values a candidate may have there; null when the distance is too wide for the bands. */
  bands: number[][] | null;
}

export function similarLookup(phash: string, maxDistance: number): SimilarLookup {
  const hash = BigInt.asIntN(64, BigInt(`0x${phash}`)).toString();
  const radius = Math.floor(maxDistance / BANDS);
  return { hash, bands: radius > MAX_BAND_RADIUS ? null : bandsOf(phash).map((b) => withinBits(b, radius)) };
}
