import type { ConversionSpec, Size } from './conversion-spec';

/**
 * What conversion's use cases need from the outside: the image engine (sharp/libvips, adapters/image-processor.ts) and
 * the describer of an image's metadata (adapters/image-describer.ts). main.ts wires them in.
 */

/** An original as libvips reads it: a file, or its bytes in memory. */
export type ImageInput = string | Buffer;

export interface ImageInfo extends Size {
  format: string;
  /** Frames of an animated GIF or WebP (1 for anything else). */
  pages: number;
  /** Bits a channel as libvips names them: `uchar` (8), `ushort` (16), ... */
  depth: string;
}

export interface ProducedImage extends Size {
  size: number;
}

/** What processing adds to an image's `metadata` (CONTRACT §14); the upload result carries the rest. */
export interface ImageDescription {
  ColorMode?: string;
  ColorSpace?: string;
  exif?: Record<string, unknown>;
  thumbhash?: string;
  phash?: string;
}

/** Reads, decodes and writes images (every failure to read one is an UnprocessableImageError). */
export interface ImageEngine {
  /** The header: size (upright), format, frames, depth; no pixel decoded. */
  probe(input: ImageInput): Promise<ImageInfo>;
  /** Whether one decode at `size` can serve every output (formats and sizes where nothing is lost). */
  canDecodeOnce(image: ImageInfo, size: Size): boolean;
  /** Decodes once at `size` into `target` (a raw libvips file); returns its path. */
  decode(input: ImageInput, image: Size, size: Size, target: string): Promise<string>;
  /** A Deep Zoom pyramid into `dir`. */
  deepZoom(input: ImageInput, dir: string, tileSize: number, overlap: number): Promise<void>;
  /** One output of `spec` into `target`. */
  convert(input: ImageInput, spec: ConversionSpec, target: string, pages?: number): Promise<ProducedImage>;
}

/** An image's metadata as processing reads it (`decoded`: the shared decode, when there is one). */
export type DescribeImage = (input: ImageInput, opts: { keepGps: boolean; decoded?: string }) => Promise<ImageDescription>;
