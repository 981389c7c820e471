import { z } from 'zod';
import { baseEnv, dbEnv, jobWorkerEnv, loadConfig, natsEnv, positiveInt, s3Env } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8095),
  ...dbEnv,
  ...natsEnv,
  ...s3Env,
  ...jobWorkerEnv,
  /** Addon runs at once in this process (OCR uses one core each). */
  CONCURRENCY: positiveInt(2),
  /** Debian's tesseract-ocr (with tesseract-ocr-eng): the text_extraction addon. */
  TESSERACT_PATH: z.string().min(1).default('tesseract'),
  OCR_LANGUAGE: z
    .string()
    .regex(/^[a-z_+]+$/)
    .default('eng'),
  /** One OCR run longer than this is stopped and the job fails with that reason. */
  OCR_TIMEOUT_MS: positiveInt(120_000),
  /** auto_tagging keeps detected objects at or above this score (0-1). */
  TAGGING_MIN_CONFIDENCE: z.coerce.number().min(0).max(1).default(0.3),
  /** face_recognition: a face at least this similar (cosine of embeddings) to a person's faces is that person. */
  FACE_MATCH_THRESHOLD: z.coerce.number().min(0).max(1).default(0.55),
  /** background_removal: ISNet quantised (`small`, 8-bit) or half precision (`medium`, finer edges). */
  BACKGROUND_REMOVAL_MODEL: z.enum(['small', 'medium']).default('medium'),
  /**
   * Originals kept in memory for the addons of one asset (the automatic ones after an upload, a run again): one
   * read of the object store serves them all. 0 keeps none. An original over a quarter of this is not kept.
   */
  ORIGINALS_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
  /** A kept original is read again after this long. */
  ORIGINALS_CACHE_TTL_MS: positiveInt(5 * 60_000),
  /**
   * Originals up to this size are read into memory; larger ones are streamed to a file in the temporary folder (the
   * pod's scratch volume) and decoded from there, never held whole.
   */
  ORIGINALS_IN_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(32 * 1024 * 1024),
  /** Larger originals are not read: the job fails with the reason (CONCURRENCY of them fit the 1 GiB scratch volume). */
  MAX_ORIGINAL_BYTES: positiveInt(384 * 1024 * 1024),
  /** Larger images are refused (decompression bombs), as conversion does. */
  MAX_INPUT_PIXELS: positiveInt(268_402_689),
  /**
   * The most pixels an addon holds decoded (raw RGB: 3 bytes each). Larger images are shrunk while they are read
   * (JPEG, PNG, WebP, SVG) and background_removal's PNG is at most this size; an image of a kind decoded whole
   * (progressive JPEG, interlaced PNG, GIF, HEIF/AVIF, TIFF, ...) is refused above it, its job FAILED with the reason.
   */
  MAX_DECODE_PIXELS: positiveInt(40_000_000),
  /** text_extraction gives tesseract at most this many pixels (it holds about 11 bytes a pixel; a 300 dpi A3 page is 17 MP). */
  OCR_MAX_PIXELS: positiveInt(25_000_000),
});

export type AddonConfig = z.infer<typeof configSchema>;

export const loadAddonConfig = (env: NodeJS.ProcessEnv = process.env): AddonConfig => loadConfig(configSchema, env);
