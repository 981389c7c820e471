/**
 * Settings in the browser with the API's rules and words (services/auth/src/domain/settings.ts: the PATCH schema and
 * the profile check of applySettingsPatch), so a form says what Update Settings would before sending it; the API
 * still decides, and its 400 `details` land next to the same fields, keyed by the same paths
 * (`conversions.custom.thumb.width`). test/settings-form.unit.test.ts holds the two to the same paths and messages.
 */

// The asset model's keys, from the one declaration the services use (a file of constants only, bundled as it is).
import { BUILTIN_IMAGE_KEYS, BUILTIN_VIDEO_KEYS, IMAGE_ADDONS, VIDEO_ADDONS } from '../../../../libs/internal-api/src/conversion-keys';

export { BUILTIN_IMAGE_KEYS, BUILTIN_VIDEO_KEYS, IMAGE_ADDONS, VIDEO_ADDONS };
export const FITS = ['cover', 'contain', 'inside', 'fill'] as const;
export const FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const;
/** The names a custom conversion may not take (settings.ts RESERVED). */
const RESERVED = new Set<string>([...BUILTIN_IMAGE_KEYS, ...BUILTIN_VIDEO_KEYS, ...IMAGE_ADDONS, 'original']);
export const MAX_CUSTOM = 50;

export interface CustomConversion {
  width?: number;
  height?: number;
  fit: string;
  format: string;
  quality: number;
}

export interface Settings {
  webhooks: { urls: string[]; secret: string; previous_secret?: string; previous_secret_expires_at?: string };
  conversions: { custom: Record<string, CustomConversion>; profile: { image: string[]; video: string[] }; watermark_asset_id: string | null };
  addons: { auto: { image: string[]; video: string[] } };
  bulk_delete: { max_assets: number; max_range_days: number; export: boolean };
  metadata: { keep_gps: boolean };
}

export interface SettingsPatch {
  webhooks?: { urls?: string[]; rotate_secret?: boolean };
  conversions?: {
    custom?: Record<string, CustomConversion>;
    profile?: { image?: string[]; video?: string[] };
    watermark_asset_id?: string | null;
  };
  addons?: { auto?: { image?: string[]; video?: string[] } };
  bulk_delete?: { max_assets?: number; max_range_days?: number; export?: boolean };
  metadata?: { keep_gps?: boolean };
}

/** API path → its messages (joined by '; ', in the API's order). */
export type PathErrors = Record<string, string>;

const oneOf = (values: readonly string[]) => `Invalid option: expected one of ${values.map((v) => `"${v}"`).join('|')}`;

class Problems {
  readonly out: PathErrors = {};
  add(path: string, message: string): void {
    this.out[path] = this.out[path] ? `${this.out[path]}; ${message}` : message;
  }
  get count(): number {
    return Object.keys(this.out).length;
  }
}

/** zod's `number().int().min(lo).max(hi)`: a fraction is refused as such before its range is looked at. */
function checkInt(p: Problems, path: string, n: number | undefined, lo: number, hi: number): void {
  if (n === undefined) return;
  if (!Number.isInteger(n)) p.add(path, Number.isNaN(n) ? 'Invalid input: expected number, received NaN' : 'Invalid input: expected int, received number');
  else if (n < lo) p.add(path, `Too small: expected number to be >=${lo}`);
  else if (n > hi) p.add(path, `Too big: expected number to be <=${hi}`);
}

/**
 * A list of unique entries: each item's problems, then too many, then repeats (zod's order). An item outside an
 * enum stops zod there (its refinement of the list does not run); a string's length or refinement does not.
 */
function checkList(p: Problems, path: string, list: readonly string[] | undefined, max: number, item: (v: string) => string[], enumItems = false): void {
  if (!list) return;
  let refused = false;
  list.forEach((v, i) =>
    item(v).forEach((m) => {
      refused = true;
      p.add(`${path}.${i}`, m);
    }),
  );
  if (list.length > max) p.add(path, `Too big: expected array to have <=${max} items`);
  if (!(enumItems && refused) && new Set(list).size !== list.length) p.add(path, 'must not repeat an entry');
}

const inList = (allowed: readonly string[]) => (v: string) => (allowed.includes(v) ? [] : [oneOf(allowed)]);

export function webhookUrlProblems(u: string): string[] {
  const out: string[] = [];
  if (u.length > 2048) out.push('Too big: expected string to have <=2048 characters');
  let ok = false;
  try {
    ok = ['http:', 'https:'].includes(new URL(u).protocol);
  } catch {
    ok = false;
  }
  if (!ok) out.push('must be an http(s) URL');
  return out;
}

/** A custom conversion's name, as the API words a refused key of `conversions.custom`. */
export function conversionNameProblems(name: string): string[] {
  const out: string[] = [];
  if (!/^[A-Za-z0-9]{1,30}$/.test(name)) out.push('a conversion name is 1-30 characters of [A-Za-z0-9]');
  if (RESERVED.has(name)) out.push('a built-in key cannot be a custom conversion');
  return out;
}

function checkConversion(p: Problems, path: string, c: CustomConversion): void {
  const before = p.count;
  checkInt(p, `${path}.width`, c.width, 1, 8192);
  checkInt(p, `${path}.height`, c.height, 1, 8192);
  if (!(FITS as readonly string[]).includes(c.fit)) p.add(`${path}.fit`, oneOf(FITS));
  if (!(FORMATS as readonly string[]).includes(c.format)) p.add(`${path}.format`, oneOf(FORMATS));
  checkInt(p, `${path}.quality`, c.quality, 1, 100);
  if (p.count === before && c.width === undefined && c.height === undefined) p.add(path, 'width or height is required');
}

/**
 * The problems Update Settings would answer 400 with for `patch` (`current`: the settings it applies to, for the
 * rule that the image profile names only built-in image keys and custom conversions that exist after the patch).
 */
export function checkSettingsPatch(patch: SettingsPatch, current?: Settings): PathErrors {
  const p = new Problems();
  checkList(p, 'webhooks.urls', patch.webhooks?.urls, 10, webhookUrlProblems);
  const c = patch.conversions;
  if (c?.custom) {
    const entries = Object.entries(c.custom);
    for (const [name, conv] of entries) {
      // The API joins the path's non-empty parts: an empty name is reported at `conversions.custom`.
      const path = name ? `conversions.custom.${name}` : 'conversions.custom';
      const keyProblems = conversionNameProblems(name);
      if (keyProblems.length > 0) keyProblems.forEach((m) => p.add(path, m));
      else checkConversion(p, path, conv);
    }
    if (p.count === 0 && entries.length > MAX_CUSTOM) p.add('conversions.custom', `at most ${MAX_CUSTOM} custom conversions`);
  }
  checkList(p, 'conversions.profile.image', c?.profile?.image, 50, (v) => (v.length < 1 ? ['Too small: expected string to have >=1 characters'] : []));
  checkList(p, 'conversions.profile.video', c?.profile?.video, 20, inList(BUILTIN_VIDEO_KEYS), true);
  if (typeof c?.watermark_asset_id === 'string' && !/^[A-Za-z0-9]{32}$/.test(c.watermark_asset_id)) p.add('conversions.watermark_asset_id', 'an asset id');
  checkList(p, 'addons.auto.image', patch.addons?.auto?.image, 10, inList(IMAGE_ADDONS), true);
  checkList(p, 'addons.auto.video', patch.addons?.auto?.video, 10, inList(VIDEO_ADDONS), true);
  checkInt(p, 'bulk_delete.max_assets', patch.bulk_delete?.max_assets, 1, 100_000);
  checkInt(p, 'bulk_delete.max_range_days', patch.bulk_delete?.max_range_days, 1, 366);
  if (p.count === 0 && current) {
    const custom = c?.custom ?? current.conversions.custom;
    const image = c?.profile?.image ?? current.conversions.profile.image;
    const known = new Set<string>([...BUILTIN_IMAGE_KEYS, ...Object.keys(custom)]);
    const unknown = image.filter((k) => !known.has(k));
    if (unknown.length > 0) p.add('conversions.profile.image', `unknown conversion keys: ${unknown.join(', ')}`);
  }
  return p.out;
}

/** A contract error body's `details` as API path → messages; the rest (code and message) as one line. */
export function apiErrors(error: unknown): { byPath: PathErrors; general?: string } {
  const e =
    typeof error === 'object' && error !== null && 'error' in error
      ? (error as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error
      : undefined;
  const byPath: PathErrors = {};
  for (const d of Array.isArray(e?.details) ? (e.details as unknown[]) : []) {
    if (typeof d !== 'object' || d === null) continue;
    const { path, message } = d as { path?: unknown; message?: unknown };
    if (typeof message !== 'string') continue;
    const key = typeof path === 'string' ? path : '';
    byPath[key] = byPath[key] ? `${byPath[key]}; ${message}` : message;
  }
  if (Object.keys(byPath).length > 0) return { byPath };
  const message = typeof e?.message === 'string' ? e.message : error instanceof Error ? error.message : 'The request failed';
  return { byPath, general: typeof e?.code === 'string' ? `${message} (${e.code})` : message };
}

/** The messages at `path` or below it (`conversions.custom` gathers those of every entry, with their tail). */
export function errorsUnder(errors: PathErrors, path: string): string | undefined {
  const out: string[] = [];
  for (const [k, m] of Object.entries(errors)) {
    if (k === path) out.push(m);
    else if (k.startsWith(`${path}.`)) out.push(`${k.slice(path.length + 1)}: ${m}`);
  }
  return out.length > 0 ? out.join('; ') : undefined;
}

/** A form's text of a whole number: '' is "not given"; anything else the number it reads as (NaN if none). */
export const numberOf = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text.trim()));

/** Webhook URLs as typed, one a line: blank lines dropped, each trimmed. */
export const urlLines = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);

/** The Get Conversion query of a preview: the custom conversion as on-demand parameters of an image's original. */
export function previewQuery(c: CustomConversion): string {
  const q = new URLSearchParams();
  if (c.width !== undefined) q.set('w', String(c.width));
  if (c.height !== undefined) q.set('h', String(c.height));
  q.set('fit', c.fit);
  q.set('format', c.format);
  q.set('q', String(c.quality));
  return q.toString();
}
