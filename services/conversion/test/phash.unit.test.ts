import { perceptualHashOf } from '../src/adapters/image-describer';

/** The textbook 2-D DCT, term by term: what the separable computation must equal. */
function reference(pixels: Uint8Array): string {
  const N = 32;
  const cos = (i: number, u: number) => Math.cos(((2 * i + 1) * u * Math.PI) / (2 * N));
  const c: number[] = [];
  for (let u = 0; u < 8; u++) {
    for (let v = 0; v < 8; v++) {
      let sum = 0;
      for (let x = 0; x < N; x++) for (let y = 0; y < N; y++) sum += (pixels[y * N + x] ?? 0) * cos(x, u) * cos(y, v);
      c.push(sum);
    }
  }
  const sorted = c.slice(1).sort((a, b) => a - b);
  const median = ((sorted[31] ?? 0) + (sorted[32] ?? 0)) / 2;
  let hex = '';
  for (let i = 0; i < 64; i += 4)
    hex += ((c[i]! > median ? 8 : 0) | (c[i + 1]! > median ? 4 : 0) | (c[i + 2]! > median ? 2 : 0) | (c[i + 3]! > median ? 1 : 0)).toString(16);
  return hex;
}

describe('perceptualHashOf', () => {
  // Images with no coefficient at exactly zero: a gradient along one axis alone makes many, whose bits are float noise.
  it('equals the textbook DCT hash on noise, patterns and a blob', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 256;
    const images = [
      Uint8Array.from({ length: 1024 }, () => random()),
      Uint8Array.from({ length: 1024 }, (_, i) => ((i % 32) * 7 + Math.floor(i / 32) * 3 + (i % 32) * Math.floor(i / 32)) % 256),
      Uint8Array.from({ length: 1024 }, (_, i) => Math.max(0, 255 - 12 * Math.hypot((i % 32) - 11, Math.floor(i / 32) - 19))),
      Uint8Array.from({ length: 1024 }, (_, i) => 128 + 100 * Math.sin((i % 32) / 3 + Math.floor(i / 32) / 5)),
    ];
    for (const pixels of images) {
      const hash = perceptualHashOf(pixels);
      expect(hash).toMatch(/^[0-9a-f]{16}$/);
      expect(hash).toBe(reference(pixels));
    }
    // Not constant: different images, different hashes.
    expect(new Set(images.map((p) => perceptualHashOf(p))).size).toBe(images.length);
  });
});
