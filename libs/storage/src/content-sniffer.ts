import { fromBuffer } from 'file-type';
import exifr from 'exifr';
import { imageSize } from 'image-size';

/** How much of the start of a file is kept for sniffing the type and reading image dimensions. */
export const HEAD_BYTES = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

function looksLikeText(head: Buffer, truncated: boolean): boolean {
  if (head.length === 0) return false;
  // A cut at the head's end may split a multi-byte character; judge only complete ones.
  const sample = truncated ? head.subarray(0, Math.max(0, head.length - 3)) : head;
  if (sample.includes(0)) return false;
  try {
    utf8.decode(sample);
    return true;
  } catch {
    return false;
  }
}

/**
 * Text formats magic bytes do not name, by their first markup (after a BOM, an XML declaration, comments and a
 * doctype): SVG (an image the conversions rasterize, and active content the edges never render), HTML, other XML.
 */
export function textType(head: Buffer): string {
  const text = head
    .subarray(0, 4096)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
  const rest = text.replace(/^\s*(<\?xml[^>]*\?>\s*)?((<!--[\s\S]*?-->|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>)\s*)*/i, '');
  if (/^<svg[\s>:]/i.test(rest) || /^<!DOCTYPE\s+svg/i.test(text.trim())) return 'image/svg+xml';
  if (/^<(html|head|body)[\s>]/i.test(rest) || /<!DOCTYPE\s+html/i.test(text)) return 'text/html';
  if (/^\s*<\?xml/i.test(text) && /^<[A-Za-z_]/.test(rest)) return 'application/xml';
  return 'text/plain';
}

/** The type from the magic bytes; the client's Content-Type is never trusted. */
export async function sniffContentType(head: Buffer, truncated: boolean): Promise<string> {
  const detected = await fromBuffer(head);
  // file-type names any XML declaration application/xml: an SVG or XHTML behind it is told apart here.
  if (detected?.mime === 'application/xml') {
    const markup = textType(head);
    return markup === 'text/plain' ? 'application/xml' : markup;
  }
  if (detected) return detected.mime;
  return looksLikeText(head, truncated) ? textType(head) : 'application/octet-stream';
}

export interface ImageMetadata {
  width?: number;
  height?: number;
  Orientation?: number;
  Make?: string;
  Model?: string;
  ColorSpace?: string;
}

/** EXIF ColorSpace values (the tag is a number). */
const COLOR_SPACES: Record<number, string> = { 1: 'sRGB', 2: 'AdobeRGB', 65535: 'Uncalibrated' };

/**
 * One options object for every call: exifr keeps each options object it is given, keyed by identity, for the life of
 * the process (exifr 7's `Options.useCached`, never emptied), so a literal per call kept some 7 KB per image read:
 * about 25 MiB of upload's heap in ten minutes of the load benchmark (docs/benchmarks.md).
 */
const EXIF_OPTIONS = { pick: ['Orientation', 'Make', 'Model', 'ColorSpace'], translateValues: false, reviveValues: false };

/**
 * What an upload result says about an image, from its first bytes (CONTRACT §14): width and height as displayed
 * (EXIF orientation applied), and `Orientation`, `Make`, `Model`, `ColorSpace` where the EXIF has them (read with
 * exifr). {} for what is not an image or cannot be read.
 */
export async function imageMetadata(head: Buffer, contentType: string): Promise<ImageMetadata> {
  if (!contentType.startsWith('image/')) return {};
  const out: ImageMetadata = {};
  try {
    const size = imageSize(head);
    if (size.width === undefined || size.height === undefined) return {};
    // EXIF orientations 5-8 rotate by 90°: report the size as displayed.
    const rotated = size.orientation !== undefined && size.orientation >= 5;
    Object.assign(out, rotated ? { width: size.height, height: size.width } : { width: size.width, height: size.height });
  } catch {
    return {};
  }
  try {
    const tags = (await exifr.parse(head, EXIF_OPTIONS)) as Record<string, unknown> | undefined;
    if (typeof tags?.Orientation === 'number') out.Orientation = tags.Orientation;
    if (typeof tags?.Make === 'string' && tags.Make.trim()) out.Make = tags.Make.trim();
    if (typeof tags?.Model === 'string' && tags.Model.trim()) out.Model = tags.Model.trim();
    if (typeof tags?.ColorSpace === 'number' && COLOR_SPACES[tags.ColorSpace]) out.ColorSpace = COLOR_SPACES[tags.ColorSpace];
  } catch {
    // No or broken EXIF: the size is all there is.
  }
  return out;
}
