import type { AssetData } from './asset';
import { conversionKind, type ConversionInfo } from './conversions';

/**
 * The asset page's link builder (CONTRACT §7 and §15): what it asks Get Link for, when the transform fields apply,
 * and where the API's 400 puts each problem. The API is the judge of every value; the console only leaves out
 * what is empty and sends nothing it knows the API must refuse (a transform on an object_storage link or a key
 * that is not an image).
 */

export const FITS = ['cover', 'contain', 'inside', 'outside', 'fill'] as const;
export const FORMATS = ['jpeg', 'png', 'webp', 'avif', 'auto'] as const;
export type Fit = (typeof FITS)[number];
export type Format = (typeof FORMATS)[number];

/** The transform parameters in the order the signed URL carries them (after `accessId`, before `signature`). */
export const TRANSFORM_FIELDS = ['w', 'h', 'fit', 'format', 'q'] as const;
export type TransformField = (typeof TRANSFORM_FIELDS)[number];
export const LINK_FIELDS = ['key', 'link_type', 'delivery', 'expiry', ...TRANSFORM_FIELDS] as const;
export type LinkField = (typeof LINK_FIELDS)[number];

/** The form as typed: every value a string, an empty transform field meaning "not given". */
export interface LinkForm {
  key: string;
  link_type: 'cdn' | 'object_storage';
  delivery: 'display' | 'download';
  expiry: string;
  w: string;
  h: string;
  fit: '' | Fit;
  format: '' | Format;
  q: string;
}

export const initialLinkForm = (): LinkForm => ({
  key: 'original',
  link_type: 'cdn',
  delivery: 'display',
  expiry: '3600',
  w: '',
  h: '',
  fit: '',
  format: '',
  q: '',
});

/**
 * Whether `key` of the asset is an image the edge can transform: the original of an image, or a conversion the
 * console shows as a picture (Get Data carries no conversion content types; a multi-file or video key never is).
 */
export function isImageKey(key: string, asset: Pick<AssetData, 'content_type'> & { conversions?: unknown }): boolean {
  if (key === 'original') return asset.content_type.startsWith('image/');
  const conversions = (asset.conversions && typeof asset.conversions === 'object' ? asset.conversions : {}) as Record<string, ConversionInfo>;
  return key in conversions && conversionKind(key, asset.content_type) === 'image';
}

/** Transforms apply to `cdn` links of image keys only (anything else is a 400). */
export const transformsApply = (form: Pick<LinkForm, 'link_type'>, imageKey: boolean): boolean => form.link_type === 'cdn' && imageKey;

/** Whether any transform field holds a value. */
export const hasTransform = (form: LinkForm): boolean => TRANSFORM_FIELDS.some((f) => form[f].trim() !== '');

/** Get Link's query for the form: the transform fields given, in the contract's order, and only where they apply. */
export function linkQuery(form: LinkForm, imageKey: boolean): Record<string, string> {
  const query: Record<string, string> = { key: form.key, link_type: form.link_type, delivery: form.delivery, expiry: form.expiry };
  if (!transformsApply(form, imageKey)) return query;
  for (const f of TRANSFORM_FIELDS) {
    const v = form[f].trim();
    if (v !== '') query[f] = v;
  }
  return query;
}

export interface LinkErrors {
  /** A message per field the API named (`details[].path`, e.g. `query.q` or `expiry`). */
  fields: Partial<Record<LinkField, string>>;
  /** What belongs to no field: a 400 without details (a transform on a key that is not an image), a 404, a 403. */
  general?: string;
}

const isField = (s: string): s is LinkField => (LINK_FIELDS as readonly string[]).includes(s);

/** Splits a contract error body (`{error: {code, message, details}}`) into messages per field and the rest. */
export function linkErrors(error: unknown, fallback = 'The request failed'): LinkErrors {
  const e =
    typeof error === 'object' && error !== null && 'error' in error
      ? (error as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error
      : undefined;
  const fields: LinkErrors['fields'] = {};
  const rest: string[] = [];
  for (const d of Array.isArray(e?.details) ? (e.details as unknown[]) : []) {
    if (typeof d !== 'object' || d === null) continue;
    const { path, message } = d as { path?: unknown; message?: unknown };
    if (typeof message !== 'string') continue;
    const name = typeof path === 'string' ? (path.split('.').pop() ?? '') : '';
    if (isField(name)) fields[name] = fields[name] ? `${fields[name]}; ${message}` : message;
    else rest.push(typeof path === 'string' && path ? `${path}: ${message}` : message);
  }
  if (Object.keys(fields).length > 0 && rest.length === 0) return { fields };
  const message =
    typeof e?.message === 'string' ? (typeof e.code === 'string' ? `${e.message} (${e.code})` : e.message) : error instanceof Error ? error.message : fallback;
  return { fields, general: rest.length > 0 ? `${message}: ${rest.join('; ')}` : message };
}
