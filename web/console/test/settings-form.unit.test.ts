import * as keys from '../../../libs/internal-api/src/conversion-keys';
import { zodDetails } from '../../../libs/http/src/validate';
import { PERMISSIONS } from '../../../libs/auth-tokens/src';
import { applySettingsPatch, defaultSettings, settingsPatchSchema } from '../../../services/auth/src/domain/settings';
import {
  BUILTIN_IMAGE_KEYS,
  BUILTIN_VIDEO_KEYS,
  IMAGE_ADDONS,
  VIDEO_ADDONS,
  apiErrors,
  checkSettingsPatch,
  errorsUnder,
  numberOf,
  previewQuery,
  urlLines,
  type SettingsPatch,
} from '../src/lib/settings-form';
import { mayUse, navFor } from '../src/lib/nav';

/** What Update Settings answers for a patch: its 400 details as path → messages (the route's own zodDetails), or {}. */
function apiAnswer(patch: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (path: string, message: string) => (out[path] = out[path] ? `${out[path]}; ${message}` : message);
  const r = settingsPatchSchema.safeParse(patch);
  if (!r.success) {
    for (const d of zodDetails(r.error, '')) add(d.path, d.message);
    return out;
  }
  try {
    applySettingsPatch(defaultSettings(), r.data);
  } catch (error) {
    for (const d of (error as { details?: { path: string; message: string }[] }).details ?? []) add(d.path, d.message);
  }
  return out;
}

const conv = (c: Record<string, unknown>) => ({ fit: 'cover', format: 'webp', quality: 80, ...c });
const many = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

const patches: [string, SettingsPatch][] = [
  ['a valid conversion', { conversions: { custom: { hero: conv({ width: 1600 }) } } }],
  ['a name with a dash', { conversions: { custom: { 'hero-1': conv({ width: 10 }) } } }],
  ['an empty name', { conversions: { custom: { '': conv({ width: 10 }) } } }],
  ['a name of 31 characters', { conversions: { custom: { ['a'.repeat(31)]: conv({ width: 10 }) } } }],
  ['a reserved name', { conversions: { custom: { deepzoom: conv({ width: 10 }) } } }],
  ['a reserved name that is not alphanumeric', { conversions: { custom: { smart_imaging: conv({ width: 10 }) } } }],
  ['original', { conversions: { custom: { original: conv({ height: 10 }) } } }],
  ['no side', { conversions: { custom: { small: conv({}) } } }],
  ['sides out of range', { conversions: { custom: { small: conv({ width: 0, height: 8193 }) } } }],
  ['a fractional side', { conversions: { custom: { small: conv({ width: 1.5, height: 8192 }) } } }],
  ['an unreadable side', { conversions: { custom: { small: conv({ width: Number.NaN }) } } }],
  ['fit, format and quality', { conversions: { custom: { small: conv({ width: 5, fit: 'outside', format: 'gif', quality: 101 }) } } }],
  ['quality 0', { conversions: { custom: { small: conv({ width: 5, quality: 0 }) } } }],
  ['51 conversions', { conversions: { custom: Object.fromEntries(many(51, 'c').map((n) => [n, conv({ width: 1 })])) } }],
  ['50 conversions', { conversions: { custom: Object.fromEntries(many(50, 'c').map((n) => [n, conv({ width: 1 })])) } }],
  ['webhook URLs', { webhooks: { urls: ['ftp://x', 'https://a.example/h', 'https://a.example/h', `https://x/${'p'.repeat(2048)}`, 'not a url'] } }],
  ['11 webhook URLs', { webhooks: { urls: many(11, 'https://h.example/') } }],
  ['rotate', { webhooks: { rotate_secret: true } }],
  ['the image profile', { conversions: { profile: { image: ['', 'thumb', 'thumb'] } } }],
  ['an unknown key in the image profile', { conversions: { profile: { image: ['thumb', 'nothere', 'smart_imaging', 'gone'] } } }],
  [
    'the image profile naming a conversion added with it',
    { conversions: { custom: { thumb: conv({ width: 200 }), hero: conv({ width: 9 }) }, profile: { image: ['hero'] } } },
  ],
  ['the image profile naming a conversion removed with it', { conversions: { custom: {}, profile: { image: ['thumb'] } } }],
  ['51 image keys', { conversions: { profile: { image: many(51, 'k') } } }],
  ['the video profile', { conversions: { profile: { video: ['360p-video', 'mp3', '360p-video'] } } }],
  ['a watermark', { conversions: { watermark_asset_id: 'abc' } }],
  ['a good watermark', { conversions: { watermark_asset_id: 'a'.repeat(32) } }],
  ['no watermark', { conversions: { watermark_asset_id: null } }],
  ['addons', { addons: { auto: { image: ['auto_tagging', 'ocr', 'auto_tagging'], video: ['storyboard', 'storyboard'] } } }],
  ['bulk delete', { bulk_delete: { max_assets: 0, max_range_days: 367, export: true } }],
  ['bulk delete upper', { bulk_delete: { max_assets: 100_001, max_range_days: 2.5 } }],
  ['bulk delete fine', { bulk_delete: { max_assets: 100_000, max_range_days: 1 } }],
  ['keep_gps', { metadata: { keep_gps: true } }],
];

describe('the console checks settings with the API rules and words', () => {
  it.each(patches)('%s: the same paths and messages as Update Settings', (_what, patch) => {
    expect(checkSettingsPatch(patch, defaultSettings())).toEqual(apiAnswer(patch));
  });

  it('names the invalid conversion name in the API words (not "Invalid key in record")', () => {
    expect(apiAnswer({ conversions: { custom: { 'my-thumb': conv({ width: 10 }) } } })).toEqual({
      'conversions.custom.my-thumb': 'a conversion name is 1-30 characters of [A-Za-z0-9]',
    });
  });

  it('knows the same built-in keys and addons as the API', () => {
    expect(BUILTIN_IMAGE_KEYS).toEqual(keys.BUILTIN_IMAGE_KEYS);
    expect(BUILTIN_VIDEO_KEYS).toEqual(keys.BUILTIN_VIDEO_KEYS);
    expect(IMAGE_ADDONS).toEqual(keys.IMAGE_ADDONS);
    expect(VIDEO_ADDONS).toEqual(keys.VIDEO_ADDONS);
  });

  it('puts the API 400 details by path, and anything else in one line', () => {
    const body = {
      error: {
        code: 'VALIDATION_FAILED',
        message: 'Invalid request',
        details: [
          { path: 'webhooks.urls.0', message: 'must not point inside the network' },
          { path: 'webhooks.urls.0', message: 'again' },
        ],
      },
    };
    expect(apiErrors(body)).toEqual({ byPath: { 'webhooks.urls.0': 'must not point inside the network; again' } });
    expect(apiErrors({ error: { code: 'FORBIDDEN', message: 'No' } })).toEqual({ byPath: {}, general: 'No (FORBIDDEN)' });
    expect(errorsUnder({ 'webhooks.urls.1': 'bad', 'webhooks.urls': 'must not repeat an entry', other: 'x' }, 'webhooks.urls')).toBe(
      '1: bad; must not repeat an entry',
    );
    expect(errorsUnder({ other: 'x' }, 'webhooks.urls')).toBeUndefined();
  });

  it('reads the forms as the API values', () => {
    expect(numberOf('')).toBeUndefined();
    expect(numberOf(' 12 ')).toBe(12);
    expect(numberOf('1e')).toBeNaN();
    expect(urlLines(' https://a.example/h \n\n  https://b.example/ ')).toEqual(['https://a.example/h', 'https://b.example/']);
    expect(previewQuery({ width: 400, fit: 'inside', format: 'avif', quality: 60 })).toBe('w=400&fit=inside&format=avif&q=60');
  });
});

describe('who is offered Settings and Schemas', () => {
  const offered = (role: keyof typeof PERMISSIONS) => navFor(PERMISSIONS[role]).map((p) => p.label);
  it('Settings with MANAGE_SETTINGS, Schemas with MANAGE_SCHEMAS, after API keys', () => {
    expect(offered('ADMIN')).toEqual(expect.arrayContaining(['Settings', 'Schemas']));
    expect(offered('ADMIN').indexOf('Settings')).toBe(offered('ADMIN').indexOf('API keys') + 1);
    expect(offered('MANAGER')).toContain('Schemas');
    expect(offered('MANAGER')).not.toContain('Settings');
    for (const role of ['USER', 'CREATOR'] as const) expect(offered(role)).not.toEqual(expect.arrayContaining(['Settings']));
    for (const role of ['USER', 'CREATOR'] as const) expect(offered(role)).not.toContain('Schemas');
    expect(mayUse('settings', PERMISSIONS.MANAGER)).toBe(false);
    expect(mayUse('schemas', PERMISSIONS.MANAGER)).toBe(true);
  });
});
