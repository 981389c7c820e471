import sharp from 'sharp';
import { outputFrames, type ConversionSpec } from '../domain/conversion-spec';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { orientedSize, type Size } from '../domain/output-size';
import type { ImageEngine, ImageInfo, ImageInput, ProducedImage } from '../domain/ports';

export type { ImageInfo, ProducedImage };

/** ~16384 x 16384: a larger image is refused before its pixels are decoded (decompression bombs). */
export const DEFAULT_MAX_INPUT_PIXELS = 268_402_689;

let configured = false;

/**
 * Process-wide libvips settings, applied once. One libvips thread per image because the consumer already runs
 * CONCURRENCY images in parallel on a small machine; no operation cache, since every input is seen once.
 */
export function configureSharp(): void {
  if (configured) return;
  sharp.concurrency(1);
  sharp.cache(false);
  configured = true;
}

/**
 * Most pixels an original is decoded at for the outputs to share (48 MiB as RGB, in the job's folder): above it
 * each output decodes the original again, streaming.
 */
export const SHARED_DECODE_MAX_PIXELS = 16_000_000;

/** libwebp's effort (`method`) for every WebP made: profile renditions and transforms alike. */
export const WEBP_EFFORT = 2;

/** Formats whose one decode into 8-bit pixels loses nothing the outputs would keep (one frame, 8 bits). */
const SHARED_DECODE_FORMATS: ReadonlySet<string> = new Set(['jpeg', 'png', 'webp']);

export class ImageProcessor implements ImageEngine {
  constructor(private readonly maxInputPixels = DEFAULT_MAX_INPUT_PIXELS) {
    configureSharp();
  }

  // `failOn: 'error'` makes a truncated or corrupt file fail instead of yielding a half-grey image. `animated`
  // reads every frame (animated GIF or WebP); otherwise the first frame only.
  private open(path: ImageInput, limitInputPixels: number | false = this.maxInputPixels, animated = false): sharp.Sharp {
    return sharp(path, { failOn: 'error', limitInputPixels, sequentialRead: true, ...(animated ? { animated: true } : {}) });
  }

  /**
   * Reads the header only: the displayed size (EXIF orientation applied) and the format. Refuses what is not
   * an image or is over the pixel limit, before any decoding.
   */
  async probe(path: ImageInput): Promise<ImageInfo> {
    let meta: sharp.Metadata;
    try {
      // Header only, no pixels decoded: the limit is checked below with a message that says what is wrong.
      meta = await this.open(path, false).metadata();
    } catch (error) {
      throw new UnprocessableImageError(`the original is not a decodable image: ${messageOf(error)}`, error);
    }
    const { width, height } = meta;
    if (!width || !height) throw new UnprocessableImageError('the original has no pixel dimensions');
    if (width * height > this.maxInputPixels) {
      throw new UnprocessableImageError(`the original has ${width}x${height} pixels, more than the limit of ${this.maxInputPixels}`);
    }
    return {
      ...orientedSize({ width, height }, meta.orientation),
      format: meta.format ?? 'unknown',
      pages: meta.pages ?? 1,
      depth: meta.depth ?? 'unknown',
    };
  }

  /**
   * Whether `decode` may stand in for the original at `size`: one 8-bit frame of a format whose entropy decoding
   * dominates (JPEG, PNG, WebP), at a size whose pixels fit the memory bound.
   */
  canDecodeOnce(image: ImageInfo, size: Size): boolean {
    return SHARED_DECODE_FORMATS.has(image.format) && image.pages === 1 && image.depth === 'uchar' && size.width * size.height <= SHARED_DECODE_MAX_PIXELS;
  }

  /**
   * The original decoded once at `size` (EXIF orientation applied; JPEG and WebP shrink on load, so a small `size`
   * decodes a fraction of the coefficients) into `target`, a file in libvips' own format (`.v`: the pixels and
   * their interpretation, read back mapped, without decoding). Every output and the hashes are then made from
   * it, so the original's entropy data (most of the CPU for a camera JPEG) is decoded once per job instead of once
   * per output; the pixels never pass through the JS heap (several MB a job there made the garbage collector
   * compact the heap over and over). `image`: the original's oriented size, as `probe` read it.
   */
  async decode(path: ImageInput, image: Size, size: Size, target: string): Promise<string> {
    if (!target.endsWith('.v')) throw new Error(`decode writes a libvips file (.v), not ${target}`);
    const pipeline = this.open(path).rotate();
    if (size.width !== image.width || size.height !== image.height) pipeline.resize({ width: size.width, height: size.height, fit: 'fill' });
    try {
      await pipeline.toFile(target);
      return target;
    } catch (error) {
      if (isDecodeError(error)) throw new UnprocessableImageError(`the original cannot be decoded: ${messageOf(error)}`, error);
      throw error;
    }
  }

  /**
   * A Deep Zoom Image pyramid of the original (EXIF orientation applied) in `dir`: `image.dzi` and
   * `image_files/<level>/<col>_<row>.jpeg`, as OpenSeadragon reads it.
   */
  async deepZoom(path: ImageInput, dir: string, tileSize: number, overlap: number): Promise<void> {
    try {
      await this.open(path).rotate().jpeg({ quality: 85 }).tile({ size: tileSize, overlap, layout: 'dz', container: 'fs' }).toFile(`${dir}/image`);
    } catch (error) {
      if (isDecodeError(error)) throw new UnprocessableImageError(`the original cannot be decoded: ${messageOf(error)}`, error);
      throw error;
    }
  }

  /**
   * Decodes the original, resizes it into the spec's box and writes the encoded output to `target`. An animated
   * original stays animated where the output format can be (WebP, unless an attention crop is asked for, which
   * looks at one frame); JPEG, PNG and AVIF outputs are made of its first frame. `pages`: the original's frames,
   * as `probe` read them.
   */
  async convert(path: ImageInput, spec: ConversionSpec, target: string, pages = 1): Promise<ProducedImage> {
    const frames = outputFrames(spec, pages);
    // `.rotate()` without an angle applies the EXIF orientation, so the output looks as the camera meant.
    const pipeline = this.open(path, this.maxInputPixels, frames > 1).rotate();
    // No box at all (an on-demand format change): the image keeps its size.
    if (spec.width !== null || spec.height !== null) {
      pipeline.resize({
        width: spec.width ?? undefined,
        height: spec.height ?? undefined,
        fit: spec.fit,
        ...(spec.withoutEnlargement ? { withoutEnlargement: true } : {}),
        ...(spec.position === 'attention' ? { position: sharp.strategy.attention } : {}),
      });
    }
    switch (spec.format) {
      case 'webp':
        // Effort 2 of 0-6 (libvips' default is 4): half the CPU of the default for files 1-4 % larger (docs/benchmarks.md,
        // "conversion keeps up": "WebP at effort 2", bench/encode-cpu.bench.ts); the same trade as JPEG's and AVIF's below.
        pipeline.webp({ quality: spec.quality, effort: WEBP_EFFORT });
        break;
      case 'jpeg':
        // libjpeg-turbo defaults (Huffman tables optimised): mozjpeg's trellis search costs several times the CPU for ~10 % smaller files.
        pipeline.jpeg({ quality: spec.quality });
        break;
      case 'png':
        // PNG is lossless: quality only matters for palette output, which we do not ask for.
        pipeline.png({ compressionLevel: 9 });
        break;
      case 'avif':
        pipeline.avif({ quality: spec.quality, effort: 2 });
        break;
    }
    try {
      const info = await pipeline.toFile(target);
      // Frames are stacked in an animated output: its height is one frame's.
      return { width: info.width, height: frames > 1 ? Math.round(info.height / frames) : info.height, size: info.size };
    } catch (error) {
      // The header was readable (probe passed) but the pixel data is not: retrying will not change that.
      if (isDecodeError(error)) throw new UnprocessableImageError(`the original cannot be decoded: ${messageOf(error)}`, error);
      throw error;
    }
  }
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

// libvips reports broken input data with these phrases; anything else (disk full, EMFILE) may be transient.
const DECODE_ERROR = /(VipsJpeg|vipspng|VipsForeign|webp|heif|tiff|gif|premature end|corrupt|truncated|bad|invalid|unsupported image format|Input file)/i;

function isDecodeError(error: unknown): boolean {
  return DECODE_ERROR.test(messageOf(error));
}
