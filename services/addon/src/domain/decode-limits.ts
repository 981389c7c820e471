/**
 * Formats libvips decodes a few rows at a time while it shrinks them (JPEG and WebP even shrink inside the decoder,
 * SVG renders at the target scale): decoding one of any size up to MAX_INPUT_PIXELS holds about the shrunk result.
 * Every other kind is decoded whole before it can be shrunk (progressive JPEG, interlaced PNG, GIF, HEIF/AVIF, TIFF,
 * JPEG 2000...): its own pixels are what it costs.
 */
const SHRUNK_WHILE_READ: ReadonlySet<string> = new Set(['jpeg', 'png', 'webp', 'svg']);

/** What an image's header says, read before any pixel is decoded. */
export interface ImageHeader {
  /** sharp's name of the format (`jpeg`, `png`, `heif`, ...). */
  format: string | undefined;
  /** The upright size (EXIF orientation applied). */
  width: number;
  height: number;
  /** A progressive JPEG or an interlaced PNG. */
  progressive: boolean;
}

export interface DecodeLimits {
  /** Larger images are refused (decompression bombs). */
  maxInputPixels: number;
  /** The most pixels an addon holds decoded: an image decoded whole must fit in it. */
  maxDecodePixels: number;
}

/** The upright size to decode an image at: its own, or shrunk to fit a number of pixels. */
export interface DecodeSize {
  width: number;
  height: number;
  shrunk: boolean;
}

/** An image an addon does not read, with the reason the job fails with (no pixel of it was decoded). */
export class ImageRefused extends Error {}

const mp = (pixels: number): string => `${Math.round(pixels / 1e5) / 10} MP`;

/** sharp's format names as people know them. */
const KIND: Readonly<Record<string, string>> = { jpeg: 'JPEG', png: 'PNG', heif: 'HEIF/AVIF', tiff: 'TIFF', gif: 'GIF', jp2k: 'JPEG 2000' };

/**
 * The size to decode an image at so that at most `target` pixels are held (`target` at most `maxDecodePixels`): the
 * image's own when it fits, else shrunk with its aspect kept. Throws ImageRefused for an image over
 * `maxInputPixels`, and for one that would be decoded whole at more than `maxDecodePixels`.
 */
export function decodeSizeOf(header: ImageHeader, limits: DecodeLimits, target = limits.maxDecodePixels): DecodeSize {
  const { width, height } = header;
  const pixels = width * height;
  if (!(width > 0 && height > 0)) throw new ImageRefused('the image cannot be read: its header gives no size');
  if (pixels > limits.maxInputPixels) {
    throw new ImageRefused(`the image is ${width}×${height} (${mp(pixels)}), above the ${mp(limits.maxInputPixels)} an addon reads`);
  }
  const streamed = SHRUNK_WHILE_READ.has(header.format ?? '') && !header.progressive;
  if (!streamed && pixels > limits.maxDecodePixels) {
    const name = KIND[header.format ?? ''] ?? header.format?.toUpperCase() ?? 'unrecognised';
    const kind = header.progressive ? (header.format === 'png' ? 'an interlaced PNG' : 'a progressive JPEG') : `a ${name} image`;
    throw new ImageRefused(
      `the image is ${kind} of ${width}×${height} (${mp(pixels)}): images of this kind are decoded whole, and an addon decodes at most ${mp(limits.maxDecodePixels)}`,
    );
  }
  const most = Math.min(target, limits.maxDecodePixels);
  if (pixels <= most) return { width, height, shrunk: false };
  const scale = Math.sqrt(most / pixels);
  return { width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)), shrunk: true };
}
