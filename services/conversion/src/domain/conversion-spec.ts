import { z } from 'zod';

export const IMAGE_FORMATS = ['webp', 'jpeg', 'png', 'avif'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export interface Size {
  width: number;
  height: number;
}

export const FITS = ['cover', 'contain', 'inside', 'outside', 'fill'] as const;
export type Fit = (typeof FITS)[number];

/** Largest side accepted for an output: a bigger box is a configuration mistake, not a thumbnail. */
export const MAX_OUTPUT_SIDE = 8192;

const side = z.number().int().min(1).max(MAX_OUTPUT_SIDE);

/** One `conversions.custom.<key>` entry of the group settings (CONTRACT §3). */
export const customConversionSchema = z
  .object({
    width: side.nullish(),
    height: side.nullish(),
    fit: z.enum(FITS).default('cover'),
    format: z.enum(IMAGE_FORMATS).default('webp'),
    quality: z.number().int().min(1).max(100).default(80),
  })
  .refine((c) => (c.width ?? null) !== null || (c.height ?? null) !== null, { message: 'width or height is required' });

/** A conversion to produce: the settings entry, validated, with its key. */
export interface ConversionSpec {
  key: string;
  width: number | null;
  height: number | null;
  fit: Fit;
  format: ImageFormat;
  quality: number;
  /** Never larger than the source (built-in delivery renditions). */
  withoutEnlargement?: boolean;
  /** What a crop keeps: the centre (default) or the most salient region (sharp's attention strategy). */
  position?: 'centre' | 'attention';
  /** The box depends on the source's size: resolved with `smartImagingSpec` once it is known. */
  smart?: boolean;
}

/** `smart_imaging`: the delivery rendition (spec "Conversion", CONTRACT §3). */
export const SMART_IMAGING_KEY = 'smart_imaging';
const SMART_SIDE = 1920;
const SMART_MAX_RATIO = 3;

/**
 * The delivery rendition of an image of `source` size: WebP at most 1920 px on its longer side, never enlarged;
 * a panorama or banner longer than 3:1 is cropped to 3:1 around its most salient region (attention), so the
 * rendition stays usable in a layout.
 */
export function smartImagingSpec(source: Size): ConversionSpec {
  const base = { key: SMART_IMAGING_KEY, format: 'webp' as const, quality: 82, withoutEnlargement: true };
  const { width: w, height: h } = source;
  if (Math.max(w / h, h / w) <= SMART_MAX_RATIO) return { ...base, width: SMART_SIDE, height: SMART_SIDE, fit: 'inside' };
  // The kept region is the full short side by three times it; scaled down to 1920 px if it is longer.
  if (w >= h) {
    const width = Math.min(SMART_MAX_RATIO * h, SMART_SIDE);
    return { ...base, width, height: Math.max(1, Math.round(width / SMART_MAX_RATIO)), fit: 'cover', position: 'attention' };
  }
  const height = Math.min(SMART_MAX_RATIO * w, SMART_SIDE);
  return { ...base, width: Math.max(1, Math.round(height / SMART_MAX_RATIO)), height, fit: 'cover', position: 'attention' };
}

/** The slice of the settings record this service reads; everything else passes through untouched. */
export interface ImageSettings {
  conversions?: {
    custom?: Record<string, unknown>;
    profile?: { image?: unknown };
  };
}

/**
 * Built-in image keys (spec: "Conversion") that this service does not produce yet. They are skipped, not
 * reported as errors: the default profile lists `smart_imaging`, and an error would mark every upload ERROR.
 */
export const UNBUILT_BUILTIN_KEYS: ReadonlySet<string> = new Set<string>();

/** `deepzoom`: a Deep Zoom Image pyramid (`image.dzi` + `image_files/<level>/<col>_<row>.jpeg`), served below its key. */
export const DEEPZOOM_KEY = 'deepzoom';
export const DEEPZOOM_TILE = 254;
export const DEEPZOOM_OVERLAP = 1;

export interface ConversionPlan {
  specs: ConversionSpec[];
  /** The Deep Zoom pyramid is asked for (it is not one file, so not a spec). */
  deepzoom?: boolean;
  /** Keys that cannot be produced, with why; they go into the report's `errors`. */
  errors: Record<string, string>;
  /** Built-ins not implemented yet (neither produced nor failed). */
  skipped: string[];
}

/**
 * The image profile of a group as a list of conversions. A profile key without a valid custom definition
 * is a configuration error and is reported under its key, so the asset shows why it has no such output.
 */
export function planConversions(settings: ImageSettings, only?: readonly string[]): ConversionPlan {
  const plan: ConversionPlan = { specs: [], errors: {}, skipped: [] };
  const profile = settings.conversions?.profile?.image;
  // A re-run names its keys (they need not be in the profile, only defined); otherwise the whole profile.
  const wanted = only ?? (Array.isArray(profile) ? profile : []);
  const keys = [...new Set(wanted.filter((k): k is string => typeof k === 'string'))];
  const custom = settings.conversions?.custom ?? {};
  for (const key of keys) {
    if (key === DEEPZOOM_KEY) {
      plan.deepzoom = true;
      continue;
    }
    if (key === SMART_IMAGING_KEY) {
      plan.specs.push({ ...smartImagingSpec({ width: SMART_SIDE, height: SMART_SIDE }), smart: true });
      continue;
    }
    if (UNBUILT_BUILTIN_KEYS.has(key)) {
      plan.skipped.push(key);
      continue;
    }
    if (!Object.hasOwn(custom, key)) {
      plan.errors[key] = `conversion "${key}" is not defined in the group's custom conversions`;
      continue;
    }
    const parsed = customConversionSchema.safeParse(custom[key]);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => `${i.path.join('.') || key}: ${i.message}`).join('; ');
      plan.errors[key] = `conversion "${key}" is invalid: ${why}`;
      continue;
    }
    const { width, height, fit, format, quality } = parsed.data;
    plan.specs.push({ key, width: width ?? null, height: height ?? null, fit, format, quality });
  }
  return plan;
}

const FORMAT_OUTPUT: Record<ImageFormat, { ext: string; contentType: string }> = {
  webp: { ext: 'webp', contentType: 'image/webp' },
  jpeg: { ext: 'jpg', contentType: 'image/jpeg' },
  png: { ext: 'png', contentType: 'image/png' },
  avif: { ext: 'avif', contentType: 'image/avif' },
};

export function outputFormat(format: ImageFormat): { ext: string; contentType: string } {
  return FORMAT_OUTPUT[format];
}

/** The box the hashes are made from (the ThumbHash's pixels). */
export const HASH_BOX = { width: 100, height: 100, fit: 'inside' } as const;

/**
 * Frames `convert` writes for an original of `pages` frames: every one into an animated WebP (unless an attention
 * crop is asked for, which looks at one frame), the first only in any other format. An output's pixels are its
 * frames' pixels together (an on-demand transform's limit counts them all).
 */
export function outputFrames(spec: Pick<ConversionSpec, 'format' | 'position'>, pages: number): number {
  return spec.format === 'webp' && spec.position !== 'attention' ? Math.max(1, pages) : 1;
}
