import { createHash } from 'node:crypto';
import { badRequest, unavailable } from '@dam/errors';
import { TRANSFORM_FORMATS, type DeliveryTransform, type TransformFormat, type TransformParams } from '@dam/internal-api';
import { conversionsPrefix } from '@dam/storage';
import { conversionNotFound } from '../domain/asset.errors';
import type { ObjectStat, TransformCall } from '../domain/ports';
import type { DownloadTarget } from './read-asset.use-case';

export interface TransformVariantDeps {
  storage: ObjectStat;
  /** The conversion service; without it transforms answer 503. */
  transforms?: TransformCall;
}

const EXT: Record<TransformFormat, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', avif: 'avif' };

/** The source's own format where a transform can write it, else JPEG (a GIF, TIFF or HEIC source). */
export function sourceFormat(contentType: string): TransformFormat {
  const own = contentType.toLowerCase().replace('image/', '').replace('jpg', 'jpeg');
  return TRANSFORM_FORMATS.find((f) => f === own) ?? 'jpeg';
}

/**
 * Whether a key's bytes can be transformed: an image. `folder`: the key is a multi-file conversion (a storyboard's
 * sprite sheet is an image, but a signed link to it serves the whole folder), which a signed link cannot transform.
 */
export function isTransformable(target: Pick<DownloadTarget, 'contentType'>, folder?: string): boolean {
  return target.contentType.startsWith('image/') && folder === undefined;
}

/**
 * An on-demand transform of one key's image (Get Conversion, CONTRACT §5, and a signed link's, §15): made once by
 * conversion into storage under the original's checksum (a replace or delete removes it with the outputs) and a
 * fingerprint of the source and the parameters, then served like any stored object. conversion bounds the pixels
 * (every frame counted), the transforms at once (503 TRANSFORMS_BUSY with Retry-After) and the variants per asset.
 * `format` absent: the source's own (sourceFormat).
 */
export async function transformVariant(
  deps: TransformVariantDeps,
  source: DownloadTarget,
  key: string,
  wanted: DeliveryTransform,
  folder?: string,
): Promise<DownloadTarget> {
  if (!isTransformable(source, folder)) {
    throw badRequest('TRANSFORM_NOT_APPLICABLE', `"${key}" is not an image: on-demand transforms apply to images only`);
  }
  if (!deps.transforms) throw unavailable('On-demand transforms are not configured', 'CONVERSION_UNAVAILABLE');
  const format = wanted.format ?? sourceFormat(source.contentType);
  const params: TransformParams = {
    format,
    ...(wanted.w !== undefined ? { w: wanted.w } : {}),
    ...(wanted.h !== undefined ? { h: wanted.h } : {}),
    ...(wanted.fit !== undefined ? { fit: wanted.fit } : {}),
    ...(wanted.q !== undefined ? { q: wanted.q } : {}),
  };
  const sourceEtag = source.etag ?? (await deps.storage.stat(source.objectKey))?.etag;
  if (sourceEtag === undefined) throw conversionNotFound(key);
  // The same fingerprint for the same source version and parameters, whichever route asks: Get Conversion and a
  // signed link share the variant.
  const fingerprint = createHash('sha256')
    .update(JSON.stringify({ source: source.objectKey, etag: sourceEtag, params }))
    .digest('hex')
    .slice(0, 32);
  const cacheKey = `${conversionsPrefix(String(source.groupId), source.assetId, source.assetChecksum)}_t/${fingerprint}.${EXT[format]}`;
  const hit = await deps.storage.stat(cacheKey);
  const made = hit
    ? { object_key: cacheKey, content_type: `image/${format}`, size: hit.size }
    : await deps.transforms({ source_key: source.objectKey, cache_key: cacheKey, params });
  const base = source.fileName.includes('.') ? source.fileName.slice(0, source.fileName.lastIndexOf('.')) : source.fileName;
  return {
    ...source,
    objectKey: made.object_key,
    contentType: made.content_type,
    size: made.size,
    // The variant's own ETag is the object store's: the caller stats it (the source's would be wrong).
    etag: undefined,
    fileName: `${base}.${EXT[format]}`,
  };
}
