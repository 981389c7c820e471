import { createHmac, timingSafeEqual } from 'node:crypto';
import { forbidden } from '@dam/errors';
import { TRANSFORM_FITS, TRANSFORM_FORMATS, type TransformFormat } from '@dam/internal-api';

/**
 * A `cdn` link's on-demand transform (CONTRACT §15): the parameters of Get Conversion, `fit` with `outside`, and
 * `format=auto` resolved at the edge from each request's Accept.
 */
export interface LinkTransform {
  w?: number;
  h?: number;
  fit?: (typeof TRANSFORM_FITS)[number];
  format?: TransformFormat | 'auto';
  q?: number;
}

/** The transform parameters in the order a link writes and signs them (after `accessId`, before `signature`). */
export const TRANSFORM_QUERY = ['w', 'h', 'fit', 'format', 'q'] as const;
export const LINK_FORMATS = [...TRANSFORM_FORMATS, 'auto'] as const;
/** The largest side a transform asks for, and the quality's range. */
export const TRANSFORM_MAX_SIDE = 8192;
export const TRANSFORM_MAX_QUALITY = 100;

/** The signed parameters of a `cdn` link, in the order the specification writes them (endpoint 16, CONTRACT §15). */
export interface LinkParams {
  key: string;
  /** Epoch seconds. */
  expiry: number;
  delivery: 'display' | 'download';
  accessId: string;
  /** Absent or empty: no transform, and the link is exactly what it was before transforms existed. */
  transform?: LinkTransform;
}

/** `name=value` of each transform parameter given, in the link's order (none: an empty list). */
export function transformPairs(t: LinkTransform | undefined): Array<[string, string]> {
  if (!t) return [];
  const pairs: Array<[string, string]> = [];
  for (const name of TRANSFORM_QUERY) {
    const v = t[name];
    if (v !== undefined) pairs.push([name, String(v)]);
  }
  return pairs;
}

/** The latest expiry of a `cdn` link: 2038-01-19T03:14:07Z (CONTRACT §11). */
export const CDN_MAX_EXPIRY = 2_147_483_647;
/** The longest life of an `object_storage` link, in seconds (a presigned URL of S3). */
export const OBJECT_STORAGE_MAX_SECONDS = 604_800;

/**
 * The secret that signs one accessID's links: derived from a service key, so no secret is stored per user, and
 * a new accessID (rotation) has a new secret. Two service keys may be active at once (the first signs, both
 * verify), which is how the signing secret rotates without breaking links already handed out.
 */
export function accessSecret(serviceKey: Buffer, accessId: string): Buffer {
  return createHmac('sha256', serviceKey).update(`dam-link-v1:${accessId}`).digest();
}

/**
 * What is signed: the asset id and every other parameter of the link, each named, in a fixed order. A transform's
 * parameters follow, one line each, only when there are any: a link without them signs the very string it always
 * did, so every link handed out before transforms existed still verifies, and adding, removing or changing any of
 * them changes what is signed.
 */
export function canonicalLink(assetId: string, p: LinkParams): string {
  const base = `v1\n${assetId}\nkey=${p.key}\nexpiry=${p.expiry}\ndelivery=${p.delivery}\naccessId=${p.accessId}`;
  return transformPairs(p.transform).reduce((s, [name, value]) => `${s}\n${name}=${value}`, base);
}

/** HMAC-SHA256, base64url without padding (43 characters): URL-safe as it is. */
export function signLink(secret: Buffer, assetId: string, p: LinkParams): string {
  return createHmac('sha256', secret).update(canonicalLink(assetId, p)).digest('base64url');
}

/** Whether any of the secrets signed this link; every comparison takes the same time whatever matches. */
export function verifyLink(secrets: readonly Buffer[], assetId: string, p: LinkParams, signature: string): boolean {
  if (!/^[A-Za-z0-9_-]{43}$/.test(signature)) return false;
  const given = Buffer.from(signature, 'base64url');
  // The last of 43 characters carries 2 unused bits: only the canonical spelling is accepted, so no two
  // different links verify with one signature.
  if (given.toString('base64url') !== signature) return false;
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(canonicalLink(assetId, p)).digest();
    // No early exit: each key is compared whatever the previous one said.
    if (timingSafeEqual(expected, given)) ok = true;
  }
  return ok;
}

/**
 * `{cdn}/api/v1/files/content/<asset_id>[/<file>]?key=&expiry=&delivery=&accessId=[&w=&h=&fit=&format=&q=]&signature=`,
 * the parameters in the specification's order. `file` names one file of a multi-file conversion (a tile, a
 * playlist, a segment).
 */
export function cdnUrl(cdnBase: string, assetId: string, p: LinkParams, signature: string, file?: string): string {
  const path = file ? `/${file.split('/').map(encodeURIComponent).join('/')}` : '';
  const transform = transformPairs(p.transform)
    .map(([name, value]) => `&${name}=${value}`)
    .join('');
  const q = `key=${encodeURIComponent(p.key)}&expiry=${p.expiry}&delivery=${p.delivery}&accessId=${encodeURIComponent(p.accessId)}${transform}&signature=${signature}`;
  return `${cdnBase.replace(/\/$/, '')}/api/v1/files/content/${encodeURIComponent(assetId)}${path}?${q}`;
}

export type ExpiryResult = { ok: true; expiry: number } | { ok: false; message: string };

/**
 * `expiry` as asked (seconds from now, or `MAX`) → epoch seconds, within the link type's maximum: `cdn` up to
 * 2038-01-19T03:14:07Z, `object_storage` up to 604800 s from now.
 */
export function resolveExpiry(asked: string, linkType: 'cdn' | 'object_storage', nowSeconds: number): ExpiryResult {
  if (asked === 'MAX') return { ok: true, expiry: linkType === 'cdn' ? CDN_MAX_EXPIRY : nowSeconds + OBJECT_STORAGE_MAX_SECONDS };
  if (!/^[0-9]{1,12}$/.test(asked) || Number(asked) < 1) return { ok: false, message: 'expiry must be a positive number of seconds or MAX' };
  const seconds = Number(asked);
  if (linkType === 'object_storage' && seconds > OBJECT_STORAGE_MAX_SECONDS) {
    return { ok: false, message: `an object_storage link lives at most ${OBJECT_STORAGE_MAX_SECONDS} seconds` };
  }
  const expiry = nowSeconds + seconds;
  if (linkType === 'cdn' && expiry > CDN_MAX_EXPIRY) return { ok: false, message: 'a cdn link expires at the latest on 2038-01-19T03:14:07Z (expiry=MAX)' };
  return { ok: true, expiry };
}

const LINK_QUERY = ['key', 'expiry', 'delivery', 'accessId', 'signature'] as const;

const invalidLink = (why: string) => forbidden(`The link is not valid: ${why}`, 'LINK_INVALID');

/** A whole number in its canonical spelling (no sign, no leading zero, no exponent), within 1..max. */
const WHOLE = /^[1-9][0-9]{0,4}$/;
function bounded(name: string, v: string, max: number): number {
  if (!WHOLE.test(v) || Number(v) > max) throw invalidLink(`${name} is not a whole number from 1 to ${max} in its canonical form`);
  return Number(v);
}

/**
 * The parameters of a link, each once; anything else (a missing, repeated or added parameter) is refused. The
 * transform parameters are optional; each is read in the one spelling a link writes it in, so that one link has one
 * URL (a cache's key and a purge by URL find it) and a value no link carries is refused before its signature.
 */
export function linkOf(query: Readonly<Record<string, unknown>>): { params: LinkParams; signature: string } {
  const names = Object.keys(query);
  for (const name of names) {
    if (!(LINK_QUERY as readonly string[]).includes(name) && !(TRANSFORM_QUERY as readonly string[]).includes(name)) {
      throw invalidLink(`unknown parameter ${name}`);
    }
  }
  const value = (name: string): string => {
    const v = query[name];
    if (typeof v !== 'string' || v === '') throw invalidLink(`${name} is missing or repeated`);
    return v;
  };
  const get = (name: (typeof LINK_QUERY)[number]): string => value(name);
  const expiry = get('expiry');
  const delivery = get('delivery');
  // Written as signed, without leading zeros: `expiry=0<n>` verified as well (it is signed as a number), and several
  // URLs naming one link escape a cache's key and a purge by URL (security review I1).
  if (!/^(0|[1-9][0-9]{0,11})$/.test(expiry)) throw invalidLink('expiry is not a time in its canonical form');
  if (delivery !== 'display' && delivery !== 'download') throw invalidLink('delivery is neither display nor download');
  const transform: LinkTransform = {};
  if (query.w !== undefined) transform.w = bounded('w', value('w'), TRANSFORM_MAX_SIDE);
  if (query.h !== undefined) transform.h = bounded('h', value('h'), TRANSFORM_MAX_SIDE);
  if (query.fit !== undefined) {
    const fit = value('fit');
    const known = TRANSFORM_FITS.find((f) => f === fit);
    if (!known) throw invalidLink('fit is not one of cover, contain, inside, outside, fill');
    transform.fit = known;
  }
  if (query.format !== undefined) {
    const format = value('format');
    const known = LINK_FORMATS.find((f) => f === format);
    if (!known) throw invalidLink('format is not one of jpeg, png, webp, avif, auto');
    transform.format = known;
  }
  if (query.q !== undefined) transform.q = bounded('q', value('q'), TRANSFORM_MAX_QUALITY);
  const params: LinkParams = { key: get('key'), expiry: Number(expiry), delivery, accessId: get('accessId') };
  if (transformPairs(transform).length > 0) params.transform = transform;
  return { params, signature: get('signature') };
}
