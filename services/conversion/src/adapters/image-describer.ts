import exifr from 'exifr';
import sharp from 'sharp';
import { HASH_BOX } from '../domain/conversion-spec';
import type { DescribeImage, ImageDescription, ImageInput } from '../domain/ports';

type ThumbHashModule = { rgbaToThumbHash(w: number, h: number, rgba: ArrayLike<number>): Uint8Array };
// thumbhash ships as an ES module only: loaded with a real dynamic import (TypeScript's CommonJS output would
// turn `import()` into `require`, which Node 20 cannot do for an ES module).
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;
let thumbhashModule: Promise<ThumbHashModule> | undefined;
const loadThumbHash = (): Promise<ThumbHashModule> => (thumbhashModule ??= importEsm('thumbhash') as Promise<ThumbHashModule>);

const COLOR_SPACES: Record<string, string> = { srgb: 'sRGB', rgb16: 'RGB', cmyk: 'CMYK', 'b-w': 'Gray', grey16: 'Gray', lab: 'Lab' };

function colorMode(meta: sharp.Metadata): string {
  if (meta.space === 'cmyk') return 'CMYK';
  if (meta.space === 'b-w' || meta.space === 'grey16') return meta.hasAlpha ? 'GrayscaleAlpha' : 'Grayscale';
  return meta.hasAlpha ? 'RGBA' : 'RGB';
}

/** Side of the greyscale square the perceptual hash is computed from. */
const PHASH_SIZE = 32;
/** cos((2i + 1)uπ / 2N) for the 8 lowest frequencies u, row by row. */
const PHASH_COS = Float64Array.from({ length: 8 * PHASH_SIZE }, (_, k) =>
  Math.cos(((2 * (k % PHASH_SIZE) + 1) * Math.floor(k / PHASH_SIZE) * Math.PI) / (2 * PHASH_SIZE)),
);

/**
 * The 64-bit perceptual hash (pHash) of a 32x32 greyscale image: its DCT, the 8x8 lowest frequencies against
 * their median, as 16 hex digits. Near-identical images differ in few bits (Hamming distance).
 */
export function perceptualHashOf(pixels: Uint8Array): string {
  const N = PHASH_SIZE;
  // The 2-D DCT is separable: along the rows first (8 frequencies of each of the N rows), then down the columns.
  const rows = new Float64Array(N * 8);
  for (let y = 0; y < N; y++) {
    for (let u = 0; u < 8; u++) {
      let sum = 0;
      for (let x = 0; x < N; x++) sum += (pixels[y * N + x] ?? 0) * PHASH_COS[u * N + x]!;
      rows[y * 8 + u] = sum;
    }
  }
  const coefficients: number[] = [];
  for (let u = 0; u < 8; u++) {
    for (let v = 0; v < 8; v++) {
      let sum = 0;
      for (let y = 0; y < N; y++) sum += rows[y * 8 + u]! * PHASH_COS[v * N + y]!;
      coefficients.push(sum);
    }
  }
  // The DC term says only how bright the image is: left out of the median.
  const sorted = coefficients.slice(1).sort((a, b) => a - b);
  const median = ((sorted[31] ?? 0) + (sorted[32] ?? 0)) / 2;
  let hex = '';
  for (let i = 0; i < 64; i += 4) {
    let nibble = 0;
    for (let b = 0; b < 4; b++) nibble = (nibble << 1) | ((coefficients[i + b] ?? 0) > median ? 1 : 0);
    hex += nibble.toString(16);
  }
  return hex;
}

/**
 * Both hashes from one decode (shrink-on-load makes it cheap): the image at most 100 px as RGBA gives the
 * ThumbHash (base64, a ~25-byte placeholder clients paint while the image loads), and the same pixels in
 * greyscale at 32x32 the perceptual hash.
 */
export async function imageHashes(input: ImageInput): Promise<{ thumbhash: string; phash: string }> {
  const { data, info } = await sharp(input, { failOn: 'error' })
    .rotate()
    .resize(HASH_BOX.width, HASH_BOX.height, { fit: HASH_BOX.fit })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const { rgbaToThumbHash } = await loadThumbHash();
  const grey = await sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
    .removeAlpha()
    .greyscale()
    .resize(PHASH_SIZE, PHASH_SIZE, { fit: 'fill' })
    .raw()
    .toBuffer();
  return { thumbhash: Buffer.from(rgbaToThumbHash(info.width, info.height, data)).toString('base64'), phash: perceptualHashOf(grey) };
}

const iso = (v: unknown): string | undefined => (v instanceof Date && !Number.isNaN(v.getTime()) ? v.toISOString() : typeof v === 'string' ? v : undefined);
const text = (v: unknown): string | undefined => {
  if (typeof v === 'string' && v.trim()) return v.trim();
  if (v && typeof v === 'object' && 'value' in v && typeof (v as { value: unknown }).value === 'string') return (v as { value: string }).value.trim();
  return undefined;
};

/**
 * The two ways tags are read, one options object each: exifr keeps every options object it is given, keyed by
 * identity, for the life of the process (exifr 7's `Options.useCached`, never emptied), so a literal per call kept
 * some 6 KB per image described (docs/benchmarks.md, "Memory under load").
 */
const EXIF_OPTIONS = {
  withGps: { tiff: true, exif: true, iptc: true, xmp: true, gps: true, mergeOutput: true },
  withoutGps: { tiff: true, exif: true, iptc: true, xmp: true, gps: false, mergeOutput: true },
};

/** The selected EXIF, IPTC and XMP fields (exifr); GPS only when the group keeps it. */
async function selectedTags(input: ImageInput, keepGps: boolean): Promise<Record<string, unknown> | undefined> {
  const options = keepGps ? EXIF_OPTIONS.withGps : EXIF_OPTIONS.withoutGps;
  const tags = (await exifr.parse(input, options).catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!tags) return undefined;
  const out: Record<string, unknown> = {};
  const when = iso(tags.DateTimeOriginal);
  if (when) out.DateTimeOriginal = when;
  const artist = text(tags.Artist) ?? text(tags.creator) ?? text(tags.Byline);
  if (artist) out.Artist = artist;
  const copyright = text(tags.Copyright) ?? text(tags.rights) ?? text(tags.CopyrightNotice);
  if (copyright) out.Copyright = copyright;
  const description = text(tags.ImageDescription) ?? text(tags.description) ?? text(tags.Caption);
  if (description) out.Description = description;
  const keywords = tags.Keywords ?? tags.subject;
  const list = (Array.isArray(keywords) ? keywords : typeof keywords === 'string' ? [keywords] : []).map(String).filter(Boolean);
  if (list.length > 0) out.Keywords = list;
  if (keepGps && typeof tags.latitude === 'number' && typeof tags.longitude === 'number') out.GPS = { latitude: tags.latitude, longitude: tags.longitude };
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Everything processing learns about one image. A field that cannot be read is left out, never an error.
 * `decoded`: the original decoded already (`ImageProcessor.decode`), which the hashes are then made from.
 */
export const describeImage: DescribeImage = async (input: ImageInput, opts: { keepGps: boolean; decoded?: string }): Promise<ImageDescription> => {
  const out: ImageDescription = {};
  const meta = await sharp(input)
    .metadata()
    .catch(() => undefined);
  if (meta) {
    out.ColorMode = colorMode(meta);
    if (meta.space && COLOR_SPACES[meta.space]) out.ColorSpace = COLOR_SPACES[meta.space];
  }
  const exif = await selectedTags(input, opts.keepGps);
  if (exif) out.exif = exif;
  const hashes = await imageHashes(opts.decoded ?? input).catch(() => undefined);
  if (hashes) Object.assign(out, hashes);
  return out;
};
