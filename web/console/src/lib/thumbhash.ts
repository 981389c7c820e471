import { thumbHashToDataURL } from 'thumbhash';

/**
 * A thumbhash (base64, Get Data `metadata.thumbhash`) as a small PNG data URL: the placeholder shown until the
 * thumbnail arrives, or instead of it. undefined for a missing or broken hash.
 */
export function thumbhashDataUrl(hash: unknown): string | undefined {
  if (typeof hash !== 'string' || hash.length === 0 || hash.length > 200) return undefined;
  try {
    const bytes = Uint8Array.from(atob(hash), (c) => c.charCodeAt(0));
    return thumbHashToDataURL(bytes);
  } catch {
    return undefined;
  }
}
