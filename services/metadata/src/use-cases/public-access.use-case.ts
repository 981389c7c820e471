import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { forbidden, validationFailed } from '@dam/errors';
import { isActiveContentType } from '@dam/http';
import { CUSTOM_CONVERSION_NAME, PUBLIC_VIDEO_KEYS, RESERVED_CONVERSION_KEYS } from '@dam/internal-api';
import { isImage, isVideo, storedObjectsOf, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound, conversionNotFound } from '../domain/asset.errors';
import type { RunInTransaction } from '../domain/ports';

const VIDEO_KEYS: ReadonlySet<string> = new Set(PUBLIC_VIDEO_KEYS);

/** Spec endpoint 10: `original` for every file; images `deepzoom` and custom conversions; videos their transcodes. */
export function mayBePublic(asset: Pick<Asset, 'contentType'>, key: string): boolean {
  if (key === 'original') return true;
  if (isImage(asset.contentType)) return key === 'deepzoom' || (CUSTOM_CONVERSION_NAME.test(key) && !RESERVED_CONVERSION_KEYS.has(key));
  if (isVideo(asset.contentType)) return VIDEO_KEYS.has(key);
  return false;
}

/**
 * The type of a public key's object when its bytes are a user's own (the original, a custom conversion), undefined
 * for the conversions this suite makes (a Deep Zoom descriptor is XML of our own writing) or one that does not exist.
 */
function uploadedTypeOf(asset: Pick<Asset, 'contentType' | 'conversions'>, key: string): string | undefined {
  if (key === 'original') return asset.contentType;
  if (!CUSTOM_CONVERSION_NAME.test(key) || RESERVED_CONVERSION_KEYS.has(key)) return undefined;
  return Object.hasOwn(asset.conversions, key) ? asset.conversions[key]?.content_type : undefined;
}

/**
 * Whether the key's object would be active content on the object store's origin. The store serves a public object
 * as it is stored: inline, with no Content-Disposition, CSP or nosniff, so a user's HTML, SVG, XML or script would
 * run on the `s3` host for anyone given its URL (the API's own responses force these to attachments).
 */
export function isActiveWhenPublic(asset: Pick<Asset, 'contentType' | 'conversions'>, key: string): boolean {
  const type = uploadedTypeOf(asset, key);
  return type !== undefined && isActiveContentType(type);
}

/**
 * Set Public Access: the keys' objects become anonymously readable (the caller then writes the bucket policy
 * from `public_objects`), and Get Data shows `conversions.<key>.public` and `urls.public.<key>`. Deleting,
 * replacing or purging the asset revokes them.
 */
export async function setPublicAccess(
  runInTransaction: RunInTransaction,
  caller: Principal,
  id: string,
  keys: string[],
  publicUrl: (objectKey: string) => string,
): Promise<{ id: string; public: Record<string, true> }> {
  return runInTransaction(async (tx) => {
    const asset = await tx.assets.findForUpdate(caller.group_id, id);
    if (!asset || !canRead(caller, asset)) throw assetNotFound();
    if (asset.deletedAt) throw assetInTrash();
    if (!canEditAsset(caller, asset.creatorId)) throw forbidden('You may change only your own assets');
    const refused = [...new Set(keys)].filter((k) => !mayBePublic(asset, k));
    if (refused.length > 0) {
      throw validationFailed(
        refused.map((k) => ({ path: 'keys', message: `"${k}" cannot be made public for a ${asset.contentType} asset` })),
        'Some keys cannot be made public for this file type',
      );
    }
    const active = [...new Set(keys)].filter((k) => isActiveWhenPublic(asset, k));
    if (active.length > 0) {
      throw validationFailed(
        active.map((k) => ({
          path: 'keys',
          message: `"${k}" is ${uploadedTypeOf(asset, k) || 'of no declared type'}: a public URL would show it inline as a page on the object store's address; share it with a download link instead`,
        })),
        'Active content (HTML, SVG, XML, script) cannot be made public',
      );
    }
    const entries = [...new Set(keys)].map((key) => {
      if (key === 'original') return { key, objectKey: asset.objectKey, url: publicUrl(asset.objectKey) };
      const conversion = Object.hasOwn(asset.conversions, key) ? asset.conversions[key] : undefined;
      if (!conversion) throw conversionNotFound(key);
      // A multi-file conversion (HLS, Deep Zoom) is readable as its whole folder (the policy names `<folder>*`,
      // this asset's own folder for this original), and its URL is its descriptor's.
      const stored = storedObjectsOf(conversion);
      return { key, objectKey: stored.endsWith('/') ? `${stored}*` : stored, url: publicUrl(conversion.object_key) };
    });
    await tx.publicObjects.add(
      asset.groupId,
      asset.id,
      entries.map(({ key, objectKey }) => ({ key, objectKey })),
    );
    const urls = { ...asset.publicUrls, ...Object.fromEntries(entries.map((e) => [e.key, e.url])) };
    await tx.assets.setPublicUrls(asset.groupId, asset.id, urls);
    return { id, public: Object.fromEntries(entries.map((e) => [e.key, true as const])) };
  });
}
