// Key layout (docs/internal-interfaces.md): originals by group and asset; conversions additionally by the
// original's checksum, so a repeated conversion overwrites itself and a replaced original never mixes with
// outputs made from the old one.

function segment(value: string, what: string): string {
  if (!value || value.includes('/') || value === '.' || value === '..') {
    throw new Error(`${what} "${value}" cannot be used in an object key`);
  }
  return value;
}

export function originalKey(groupId: string, assetId: string): string {
  return `originals/${segment(groupId, 'group id')}/${segment(assetId, 'asset id')}`;
}

/**
 * Where a replacement original is streamed (`originals/<group_id>/<asset_id>-<token>`): next to the live one,
 * never over it, so a download running while a replace completes reads the old bytes or the new, never a mix.
 */
export function replacementKey(groupId: string, assetId: string, token: string): string {
  if (!/^[0-9a-f]{16}$/.test(token)) throw new Error(`replacement token "${token}" must be 16 hex digits`);
  return `${originalKey(groupId, assetId)}-${token}`;
}

/**
 * Whether `key` is one of this asset's original keys: the first original, or a replacement streamed next to it
 * (`<original key>-<16 hex>`). Ids that could not be one path segment own no key at all. A key arriving in a
 * request or a message names an object only after this check (ARCHITECTURE rule 9).
 */
export function isOwnOriginalKey(groupId: string | number, assetId: string, key: string): boolean {
  let own: string;
  try {
    own = originalKey(String(groupId), assetId);
  } catch {
    return false;
  }
  return key === own || (key.startsWith(`${own}-`) && /^[0-9a-f]{16}$/.test(key.slice(own.length + 1)));
}

/** `conversions/<group_id>/<asset_id>/<checksum>/<key>.<ext>` (ext without a dot; empty for none). */
export function conversionKey(groupId: string, assetId: string, checksum: string, key: string, ext: string): string {
  const base = `${conversionsPrefix(groupId, assetId, checksum)}${segment(key, 'conversion key')}`;
  return ext ? `${base}.${ext.replace(/^\./, '')}` : base;
}

/** Every conversion of an asset (any checksum), or of one version of its original when checksum is given. */
export function conversionsPrefix(groupId: string, assetId: string, checksum?: string): string {
  const asset = `conversions/${segment(groupId, 'group id')}/${segment(assetId, 'asset id')}/`;
  return checksum === undefined ? asset : `${asset}${segment(checksum, 'checksum')}/`;
}

/** Files multi-file conversions are made of. */
const FILE_TYPES: Array<[RegExp, string]> = [
  [/\.dzi$/, 'application/xml'],
  [/\.jpe?g$/, 'image/jpeg'],
  [/\.png$/, 'image/png'],
  [/\.webp$/, 'image/webp'],
  [/\.m3u8$/, 'application/vnd.apple.mpegurl'],
  [/\.ts$/, 'video/mp2t'],
  [/\.m4s$/, 'video/iso.segment'],
  [/\.mp4$/, 'video/mp4'],
  [/\.vtt$/, 'text/vtt'],
];
/** The type of one file of a multi-file conversion (tiles, playlists, segments, cue files), by its name. */
export const contentTypeOfFile = (file: string): string => FILE_TYPES.find(([re]) => re.test(file))?.[1] ?? 'application/octet-stream';

/**
 * The one prefix anonymous clients may read (the bucket policy's single statement): published objects are copied
 * under it, never made public where they are stored.
 */
export const PUBLIC_PREFIX = 'public/';

/**
 * Where one published key of an asset is copied (`public/<group_id>/<asset_id>/<token>/`): a fresh random token per
 * publication, so a revoked URL never serves again, even after the key is published anew, and no URL can be
 * derived from an asset id.
 */
export function publicCopyPrefix(groupId: string, assetId: string, token: string): string {
  if (!/^[0-9a-f]{16,32}$/.test(token)) throw new Error(`public copy token "${token}" must be 16 to 32 hex digits`);
  return `${PUBLIC_PREFIX}${segment(groupId, 'group id')}/${segment(assetId, 'asset id')}/${token}/`;
}
