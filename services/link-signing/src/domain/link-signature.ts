import { createHmac, timingSafeEqual } from 'node:crypto';
import { forbidden } from '@dam/errors';

/** The signed parameters of a `cdn` link, in the order the specification writes them (endpoint 16). */
export interface LinkParams {
  key: string;
  /** Epoch seconds. */
  expiry: number;
  delivery: 'display' | 'download';
  accessId: string;
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

/** What is signed: the asset id and every other parameter of the link, each named, in a fixed order. */
export function canonicalLink(assetId: string, p: LinkParams): string {
  return `v1\n${assetId}\nkey=${p.key}\nexpiry=${p.expiry}\ndelivery=${p.delivery}\naccessId=${p.accessId}`;
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
 * `{cdn}/api/v1/files/content/<asset_id>[/<file>]?key=&expiry=&delivery=&accessId=&signature=`, the parameters in
 * the specification's order. `file` names one file of a multi-file conversion (a tile, a playlist, a segment).
 */
export function cdnUrl(cdnBase: string, assetId: string, p: LinkParams, signature: string, file?: string): string {
  const path = file ? `/${file.split('/').map(encodeURIComponent).join('/')}` : '';
  const q = `key=${encodeURIComponent(p.key)}&expiry=${p.expiry}&delivery=${p.delivery}&accessId=${encodeURIComponent(p.accessId)}&signature=${signature}`;
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

/** The five parameters of a link, each once; anything else (a missing, repeated or added parameter) is refused. */
export function linkOf(query: Readonly<Record<string, unknown>>): { params: LinkParams; signature: string } {
  const names = Object.keys(query);
  for (const name of names) if (!(LINK_QUERY as readonly string[]).includes(name)) throw invalidLink(`unknown parameter ${name}`);
  const get = (name: (typeof LINK_QUERY)[number]): string => {
    const v = query[name];
    if (typeof v !== 'string' || v === '') throw invalidLink(`${name} is missing or repeated`);
    return v;
  };
  const expiry = get('expiry');
  const delivery = get('delivery');
  // Written as signed, without leading zeros: `expiry=0<n>` verified as well (it is signed as a number), and several
  // URLs naming one link escape a cache's key and a purge by URL (security review I1).
  if (!/^(0|[1-9][0-9]{0,11})$/.test(expiry)) throw invalidLink('expiry is not a time in its canonical form');
  if (delivery !== 'display' && delivery !== 'download') throw invalidLink('delivery is neither display nor download');
  return { params: { key: get('key'), expiry: Number(expiry), delivery, accessId: get('accessId') }, signature: get('signature') };
}
