import { canEditAsset, type Principal } from '@dam/auth-tokens';
import { forbidden, validationFailed } from '@dam/errors';
import { CUSTOM_CONVERSION_NAME, PUBLIC_VIDEO_KEYS, RESERVED_CONVERSION_KEYS } from '@dam/internal-api';
import { isImage, isVideo, storedObjectsOf, type Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound, conversionNotFound } from '../domain/asset.errors';
import type { PublicSource, RunInTransaction } from '../domain/ports';

const VIDEO_KEYS: ReadonlySet<string> = new Set(PUBLIC_VIDEO_KEYS);

/** Spec endpoint 10: `original` for every file; images `deepzoom` and custom conversions; videos their transcodes. */
export function mayBePublic(asset: Pick<Asset, 'contentType'>, key: string): boolean {
  if (key === 'original') return true;
  if (isImage(asset.contentType)) return key === 'deepzoom' || (CUSTOM_CONVERSION_NAME.test(key) && !RESERVED_CONVERSION_KEYS.has(key));
  if (isVideo(asset.contentType)) return VIDEO_KEYS.has(key);
  return false;
}

/**
 * What a public key copies (migration 020): the original or a conversion's object, named in the copy by its own
 * file name, or a multi-file conversion's whole folder (HLS, Deep Zoom) under its own name, whose URL names its
 * descriptor. Undefined
 * for a conversion the asset does not have.
 */
export function publicSourceOf(asset: Pick<Asset, 'objectKey' | 'conversions'>, key: string): PublicSource | undefined {
  if (key === 'original') return { key, source: asset.objectKey, entry: fileName(asset.objectKey) };
  const conversion = Object.hasOwn(asset.conversions, key) ? asset.conversions[key] : undefined;
  if (!conversion) return undefined;
  const stored = storedObjectsOf(conversion);
  // The folder keeps its name in the copy (`<token>/hls-video/master.m3u8`).
  if (stored.endsWith('/')) return { key, source: stored, entry: `${fileName(stored.slice(0, -1))}/${conversion.object_key.slice(stored.length)}` };
  return { key, source: stored, entry: fileName(stored) };
}

const fileName = (objectKey: string): string => objectKey.slice(objectKey.lastIndexOf('/') + 1);

/**
 * Set Public Access: each key gets a copy of its own under the public prefix, which the one bucket policy statement
 * makes anonymously readable (the caller makes the copies after the commit, `PublicCopySync`), and Get Data shows
 * `conversions.<key>.public` and `urls.public.<key>`, the copy's URL. Active content (HTML, SVG, XML, script) is
 * copied as an attachment, never shown inline on the store's address (security review F15). Deleting, replacing or
 * purging the asset, or deleting the conversion, revokes the keys: their copies are removed.
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
    const wanted = [...new Set(keys)];
    const refused = wanted.filter((k) => !mayBePublic(asset, k));
    if (refused.length > 0) {
      throw validationFailed(
        refused.map((k) => ({ path: 'keys', message: `"${k}" cannot be made public for a ${asset.contentType} asset` })),
        'Some keys cannot be made public for this file type',
      );
    }
    const sources = wanted.map((key) => {
      const source = publicSourceOf(asset, key);
      if (!source) throw conversionNotFound(key);
      return source;
    });
    const published = await tx.publicObjects.add(asset.groupId, asset.id, sources);
    const urls = { ...asset.publicUrls, ...Object.fromEntries(published.map((p) => [p.key, publicUrl(p.objectKey)])) };
    await tx.assets.setPublicUrls(asset.groupId, asset.id, urls);
    return { id, public: Object.fromEntries(wanted.map((key) => [key, true as const])) };
  });
}
