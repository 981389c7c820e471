import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
// Bytes at or above this would bias the modulo; they are skipped (rejection sampling).
const LIMIT = 256 - (256 % ALPHABET.length);

/** A 32-character alphanumeric asset id from the CSPRNG (~190 bits). */
export function newAssetId(length = 32): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= LIMIT) continue;
      out += ALPHABET[byte % ALPHABET.length];
      if (out.length === length) break;
    }
  }
  return out;
}
