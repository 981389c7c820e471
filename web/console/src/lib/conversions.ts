/** Which conversion shows an asset where: thumbnails, previews, players. */

export interface ConversionInfo {
  width: number | null;
  height: number | null;
  size: number;
  public?: boolean;
}

export type ConversionKind = 'image' | 'video' | 'hls' | 'deepzoom' | 'storyboard' | 'other';

const VIDEO = /^(\d+p(-wm)?-video|clip_preview)$/;

/** How a conversion is shown, from its key (Get Data does not carry the conversions' content types). */
export function conversionKind(key: string, assetContentType: string): ConversionKind {
  if (key === 'hls-video') return 'hls';
  if (key === 'deepzoom') return 'deepzoom';
  if (key === 'storyboard') return 'storyboard';
  if (VIDEO.test(key)) return 'video';
  // Every other conversion of an image is an image (the profile's sizes, smart_imaging, background_removal,
  // custom conversions); a video's other outputs are not known to be pictures.
  if (assetContentType.startsWith('image/')) return 'image';
  return 'other';
}

/**
 * The key of the smallest picture of an asset, for a thumbnail: the image conversion with the fewest pixels
 * (ties: the smaller file), or undefined when it has none (a document, a video without pictures yet).
 */
export function thumbnailKey(conversions: Record<string, ConversionInfo> | undefined, contentType: string): string | undefined {
  let best: { key: string; pixels: number; size: number } | undefined;
  for (const [key, c] of Object.entries(conversions ?? {})) {
    if (conversionKind(key, contentType) !== 'image' || !c.width || !c.height) continue;
    const pixels = c.width * c.height;
    if (!best || pixels < best.pixels || (pixels === best.pixels && c.size < best.size)) best = { key, pixels, size: c.size };
  }
  return best?.key;
}

/** Originals a browser shows as they are. */
const WEB_IMAGES = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif']);
/** Above this an original is not fetched just to be looked at. */
export const ORIGINAL_PREVIEW_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The picture an asset page shows large: the delivery rendition (`smart_imaging`), else a small enough original
 * in a format the browser shows, else the largest image conversion.
 */
export function previewKey(conversions: Record<string, ConversionInfo> | undefined, contentType: string, size = Infinity): string | undefined {
  const all = conversions ?? {};
  if (all.smart_imaging && contentType.startsWith('image/')) return 'smart_imaging';
  if (WEB_IMAGES.has(contentType) && size <= ORIGINAL_PREVIEW_MAX_BYTES) return 'original';
  let best: { key: string; pixels: number } | undefined;
  for (const [key, c] of Object.entries(all)) {
    if (conversionKind(key, contentType) !== 'image' || !c.width || !c.height || key === 'background_removal') continue;
    const pixels = c.width * c.height;
    if (!best || pixels > best.pixels) best = { key, pixels };
  }
  return best?.key;
}

/** Keys the Process button offers for an asset (CONTRACT §6), given the group's custom conversions. */
export function processKeys(contentType: string, customConversions: string[]): string[] {
  if (contentType.startsWith('image/')) return ['smart_imaging', 'deepzoom', ...customConversions];
  if (contentType.startsWith('video/')) return ['360p-video', '480p-video', '720p-video', '1080p-video', 'hls-video', 'clip_preview', 'storyboard'];
  return [];
}
