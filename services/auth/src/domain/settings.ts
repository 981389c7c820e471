import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { validationFailed } from '@dam/errors';

import { BUILTIN_IMAGE_KEYS, BUILTIN_VIDEO_KEYS, IMAGE_ADDONS, VIDEO_ADDONS } from '@dam/internal-api';

export { BUILTIN_IMAGE_KEYS, BUILTIN_VIDEO_KEYS, IMAGE_ADDONS, VIDEO_ADDONS };
const RESERVED = new Set<string>([...BUILTIN_IMAGE_KEYS, ...BUILTIN_VIDEO_KEYS, ...IMAGE_ADDONS, 'original']);

const customConversion = z
  .strictObject({
    width: z.number().int().min(1).max(8192).optional(),
    height: z.number().int().min(1).max(8192).optional(),
    fit: z.enum(['cover', 'contain', 'inside', 'fill']).default('cover'),
    format: z.enum(['jpeg', 'png', 'webp', 'avif']).default('webp'),
    quality: z.number().int().min(1).max(100).default(80),
  })
  .refine((c) => c.width !== undefined || c.height !== undefined, { message: 'width or height is required' });

export type CustomConversion = z.infer<typeof customConversion>;

export interface Settings {
  /**
   * `secret` signs every delivery; after a rotation the replaced one is kept as `previous_secret` and signs too
   * (a second signature) until `previous_secret_expires_at`, 24 hours later, so receivers can switch over.
   */
  webhooks: { urls: string[]; secret: string; previous_secret?: string; previous_secret_expires_at?: string };
  conversions: {
    custom: Record<string, CustomConversion>;
    profile: { image: string[]; video: string[] };
    watermark_asset_id: string | null;
  };
  addons: { auto: { image: string[]; video: string[] } };
  /** `export`: a bulk delete keeps the records of the assets it deleted, as JSON lines with its job (off by default). */
  bulk_delete: { max_assets: number; max_range_days: number; export: boolean };
  /** CONTRACT §3, §14: whether image metadata keeps GPS positions (dropped by default). */
  metadata: { keep_gps: boolean };
}

/** How long a replaced webhook secret keeps signing beside the new one. */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** Standard Webhooks form; the HMAC key is the decoded bytes (CONTRACT §11). */
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export function defaultSettings(): Settings {
  return {
    webhooks: { urls: [], secret: newWebhookSecret() },
    conversions: {
      custom: { thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 } },
      profile: { image: ['thumb'], video: [] },
      watermark_asset_id: null,
    },
    addons: { auto: { image: [], video: [] } },
    bulk_delete: { max_assets: 1000, max_range_days: 31, export: false },
    metadata: { keep_gps: false },
  };
}

/** A stored record with the members later versions added (their defaults where it predates them). */
export const withDefaults = (stored: Settings): Settings => ({
  ...stored,
  bulk_delete: { ...defaultSettings().bulk_delete, ...stored.bulk_delete },
  metadata: { ...defaultSettings().metadata, ...stored.metadata },
});

const webhookUrl = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), { message: 'must be an http(s) URL' });

const unique = <T extends z.ZodType<string>>(item: T, max: number) =>
  z
    .array(item)
    .max(max)
    .refine((a) => new Set(a).size === a.length, { message: 'must not repeat an entry' });

export const settingsPatchSchema = z.strictObject({
  webhooks: z.strictObject({ urls: unique(webhookUrl, 10).optional(), rotate_secret: z.boolean().optional() }).optional(),
  conversions: z
    .strictObject({
      custom: z
        .record(
          z
            .string()
            .regex(/^[A-Za-z0-9]{1,30}$/, 'a conversion name is 1-30 characters of [A-Za-z0-9]')
            .refine((k) => !RESERVED.has(k), { message: 'a built-in key cannot be a custom conversion' }),
          customConversion,
        )
        .refine((r) => Object.keys(r).length <= 50, { message: 'at most 50 custom conversions' })
        .optional(),
      profile: z.strictObject({ image: unique(z.string().min(1), 50).optional(), video: unique(z.enum(BUILTIN_VIDEO_KEYS), 20).optional() }).optional(),
      watermark_asset_id: z
        .string()
        .regex(/^[A-Za-z0-9]{32}$/, 'an asset id')
        .nullable()
        .optional(),
    })
    .optional(),
  addons: z
    .strictObject({
      auto: z.strictObject({ image: unique(z.enum(IMAGE_ADDONS), 10).optional(), video: unique(z.enum(VIDEO_ADDONS), 10).optional() }).optional(),
    })
    .optional(),
  bulk_delete: z
    .strictObject({
      max_assets: z.number().int().min(1).max(100_000).optional(),
      max_range_days: z.number().int().min(1).max(366).optional(),
      export: z.boolean().optional(),
    })
    .optional(),
  metadata: z.strictObject({ keep_gps: z.boolean().optional() }).optional(),
});

export type SettingsPatch = z.infer<typeof settingsPatchSchema>;

/**
 * Members replace what they name (a list or the custom map as a whole, so entries can be removed);
 * absent members keep their value. The image profile may name built-in image keys or custom ones.
 */
export function applySettingsPatch(current: Settings, patch: SettingsPatch, now = new Date()): Settings {
  const next: Settings = structuredClone(current);
  if (patch.webhooks?.urls) next.webhooks.urls = patch.webhooks.urls;
  if (patch.webhooks?.rotate_secret) {
    next.webhooks.previous_secret = current.webhooks.secret;
    next.webhooks.previous_secret_expires_at = new Date(now.getTime() + SECRET_OVERLAP_MS).toISOString();
    next.webhooks.secret = newWebhookSecret();
  }
  const c = patch.conversions;
  if (c?.custom) next.conversions.custom = c.custom;
  if (c?.profile?.image) next.conversions.profile.image = c.profile.image;
  if (c?.profile?.video) next.conversions.profile.video = c.profile.video;
  if (c?.watermark_asset_id !== undefined) next.conversions.watermark_asset_id = c.watermark_asset_id;
  if (patch.addons?.auto?.image) next.addons.auto.image = patch.addons.auto.image;
  if (patch.addons?.auto?.video) next.addons.auto.video = patch.addons.auto.video;
  if (patch.bulk_delete) next.bulk_delete = { ...next.bulk_delete, ...patch.bulk_delete };
  if (patch.metadata?.keep_gps !== undefined) next.metadata = { ...next.metadata, keep_gps: patch.metadata.keep_gps };

  const known = new Set<string>([...BUILTIN_IMAGE_KEYS, ...Object.keys(next.conversions.custom)]);
  const unknown = next.conversions.profile.image.filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw validationFailed([{ path: 'conversions.profile.image', message: `unknown conversion keys: ${unknown.join(', ')}` }]);
  }
  return next;
}
