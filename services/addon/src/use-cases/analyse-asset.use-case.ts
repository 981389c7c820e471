import sharp from 'sharp';
import type { CompletedConversion } from '@dam/events';
import { isImageAddon } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import { conversionKey, type Storage } from '@dam/storage';
import { decodeSizeOf, type DecodeSize, type ImageHeader } from '../domain/decode-limits';
import { ocrResultOf } from '../domain/ocr';
import { ANALYSIS_SIDE, OriginalTooLarge, type BackgroundRemover, type Original, type People, type VisionModels } from '../domain/ports';
import { dominantColour, taggingOf } from '../domain/tagging';

/** Why an image could not be analysed, as the job's error: sharp's own message says what is wrong with it. */
const describe = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error);
  return /Input buffer|unsupported image format|corrupt|pixel limit/i.test(message) ? `the image cannot be read: ${message}` : message;
};

/** A failure of this service's own storage (its database, the object store), not of the image: the job is retried, not failed. */
export class RetryableError extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

export interface AnalyseDeps {
  /** Where background_removal stores its PNG. */
  storage: Pick<Storage, 'putBuffer'>;
  /**
   * An asset's original (its object key and checksum): a small one in memory (from the object store or the addon's
   * cache of originals), a larger one as a file; rejects with OriginalTooLarge for one larger than an addon reads.
   */
  readOriginal: (objectKey: string, checksum: string) => Promise<Original>;
  logger: Logger;
  maxInputPixels: number;
  /** The most pixels an addon holds decoded (MAX_DECODE_PIXELS): larger images are shrunk as they are read. */
  maxDecodePixels: number;
  /** The most pixels text_extraction gives tesseract (OCR_MAX_PIXELS). */
  ocrMaxPixels: number;
  /** OCR of an image (PNG bytes) to tesseract's TSV. */
  ocr: (png: Buffer) => Promise<string>;
  /** The object detector once loaded (it rejects with why it could not load). */
  objects: () => Promise<VisionModels>;
  /** auto_tagging keeps objects at or above this score. */
  minConfidence: number;
  /** The face models once loaded. */
  faces: () => Promise<VisionModels>;
  /** Who each face is: the group's people, clustered as faces arrive. */
  people: People;
  /** Faces at least this similar (cosine) to a person's centroid are that person. */
  faceMatchThreshold: number;
  /** The background removal model once loaded. */
  background: () => Promise<BackgroundRemover>;
}

/** One asset's original, as the analysis names it. */
export interface AssetRef {
  groupId: string;
  assetId: string;
  checksum: string;
}

/** What one run found: the result kept with the asset, and for `background_removal` the conversion it stored. */
export interface Analysis {
  result: Record<string, unknown>;
  conversion?: CompletedConversion;
  /** For the detectors: the decode's and the model's share of the analysis (ms), for the job's log line. */
  steps?: { decode: number; model: number };
}

/** The upright size and kind of an image from its header alone (no pixel decoded); throws for what is no image. */
async function headerOf(input: Buffer | string): Promise<ImageHeader> {
  // The header only: its size is checked against the limits by decodeSizeOf, with the reason said.
  const { format, autoOrient, isProgressive } = await sharp(input, { limitInputPixels: false }).metadata();
  return { format, width: autoOrient.width, height: autoOrient.height, progressive: isProgressive === true };
}

/** What one addon finds in an image (the original's bytes, or its file); throws with the reason it cannot. */
async function analyse(deps: AnalyseDeps, addon: string, input: Buffer | string, asset: AssetRef): Promise<Analysis> {
  // The size is checked before any pixel is decoded (decompression bombs: a one-colour 16k × 16k PNG is 800 KB), and
  // a large image is decoded shrunk as it is read: an addon never holds more than MAX_DECODE_PIXELS of it.
  const header = await headerOf(input);
  const limits = { maxInputPixels: deps.maxInputPixels, maxDecodePixels: deps.maxDecodePixels };
  const image = (size?: DecodeSize) => {
    const upright = sharp(input, { limitInputPixels: deps.maxInputPixels }).rotate();
    return size?.shrunk ? upright.resize(size.width, size.height, { fit: 'inside' }) : upright;
  };
  if (addon === 'text_extraction') {
    // Upright (EXIF orientation), first frame, grey: what tesseract reads best.
    const page = await image(decodeSizeOf(header, limits, deps.ocrMaxPixels))
      .greyscale()
      .png()
      .toBuffer();
    return { result: { ...ocrResultOf(await deps.ocr(page)) } };
  }
  if (addon === 'background_removal') {
    const size = decodeSizeOf(header, limits);
    return removeBackground(deps, await deps.background(), () => image(size), asset);
  }
  decodeSizeOf(header, limits); // refuses what would be decoded whole past the limit; the decode below shrinks the rest
  const models = await (addon === 'auto_tagging' ? deps.objects() : deps.faces());
  // One decode: upright and scaled down straight to raw pixels.
  const decoding = performance.now();
  const { data, info } = await image()
    .resize(ANALYSIS_SIDE, ANALYSIS_SIDE, { fit: 'inside', withoutEnlargement: true })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const decoded = performance.now();
  const steps = () => ({ decode: Math.round(decoded - decoding), model: Math.round(performance.now() - decoded) });
  if (addon === 'auto_tagging') {
    const objects = await models.objects(data, info.width, info.height);
    const dominant = dominantColour(data, info.width, info.height);
    return { result: { ...taggingOf({ objects, dominant, width: info.width, height: info.height, minConfidence: deps.minConfidence }) }, steps: steps() };
  }
  // face_recognition: boxes in the original's (upright) pixels, and a person per face across the group.
  const faces = await models.faces(data, info.width, info.height);
  const timing = steps();
  // Boxes in the original's upright pixels.
  const scale = header.width / info.width;
  const people = await deps.people
    .assign({
      groupId: Number(asset.groupId),
      assetId: asset.assetId,
      checksum: asset.checksum,
      embeddings: faces.map((f) => f.embedding),
      threshold: deps.faceMatchThreshold,
    })
    .catch((error: unknown) => {
      throw new RetryableError(error);
    });
  return {
    result: {
      faces: faces.map((f, i) => ({
        box: { x: Math.round(f.box[0] * scale), y: Math.round(f.box[1] * scale), width: Math.round(f.box[2] * scale), height: Math.round(f.box[3] * scale) },
        confidence: Math.round(f.score * 1000) / 1000,
        person_id: people[i] as string,
      })),
    },
    steps: timing,
  };
}

/** The side the background model sees (it scales every image to 1024×1024): the mask is found at this size. */
const MASK_SIDE = 1024;

/**
 * `background_removal`: the upright original as a PNG whose alpha is the subject's mask, stored as the conversion
 * `background_removal` of this original. The model runs on the image scaled to its own size; the mask is then
 * scaled back to the original's and joined to its pixels (one decode of the original). An original over
 * MAX_DECODE_PIXELS gives a PNG of that many pixels (its width and height in the result say so).
 */
async function removeBackground(deps: AnalyseDeps, model: BackgroundRemover, image: () => sharp.Sharp, asset: AssetRef): Promise<Analysis> {
  // A transparent original is seen on white, as a viewer shows it: its own alpha gives way to the mask.
  const { data: pixels, info: full } = await image().flatten({ background: '#ffffff' }).raw().toBuffer({ resolveWithObject: true });
  const raw = { raw: { width: full.width, height: full.height, channels: 3 as const } };
  const small = await sharp(pixels, raw)
    .resize(MASK_SIDE, MASK_SIDE, { fit: 'inside', withoutEnlargement: true })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const mask = await model.mask(small.data, small.info.width, small.info.height);
  const alpha = await sharp(mask, { raw: { width: small.info.width, height: small.info.height, channels: 1 } })
    .resize(full.width, full.height, { fit: 'fill' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
  const png = await sharp(pixels, raw)
    .joinChannel(alpha, { raw: { width: full.width, height: full.height, channels: 1 } })
    .png()
    .toBuffer();
  const objectKey = conversionKey(asset.groupId, asset.assetId, asset.checksum, 'background_removal', 'png');
  await deps.storage.putBuffer(objectKey, png, { contentType: 'image/png', size: png.length }).catch((error: unknown) => {
    throw new RetryableError(error);
  });
  const conversion = { object_key: objectKey, content_type: 'image/png', width: full.width, height: full.height, size: png.length };
  return { result: { key: 'background_removal', width: full.width, height: full.height, size: png.length }, conversion };
}

/** How one addon run ended: what it found, or why the image could not be analysed (a retry would not mend it). */
export type AnalyseOutcome = ({ found: true } & Analysis & { ms: { read: number; analyse: number } }) | { found: false; reason: string };

/**
 * Runs one addon on one asset's original: reads it (a large one as a file, never whole into memory; one over
 * MAX_ORIGINAL_BYTES unread), analyses it, and says what it found or why it could not. A failure of this service's
 * own storage (its database, the object store) throws, so the job is retried.
 */
export async function analyseAsset(deps: AnalyseDeps, input: AssetRef & { addon: string; sourceKey: string }): Promise<AnalyseOutcome> {
  if (!isImageAddon(input.addon)) return { found: false, reason: `the ${input.addon} addon is not available in this version` };
  const started = Date.now();
  const original = await deps.readOriginal(input.sourceKey, input.checksum).catch((error: unknown) => {
    if (error instanceof OriginalTooLarge) return error;
    throw error;
  });
  if (original instanceof OriginalTooLarge) return { found: false, reason: original.message };
  const read = Date.now();
  try {
    const analysis = await analyse(deps, input.addon, original.input, input);
    return { found: true, ...analysis, ms: { read: read - started, analyse: Date.now() - read } };
  } catch (error) {
    if (error instanceof RetryableError) throw error.cause;
    // An image the tools cannot read, or a model that could not load: the job ends with the reason.
    return { found: false, reason: describe(error) };
  } finally {
    await original.release();
  }
}
