/**
 * The keys of the asset model (spec "Conversion", CONTRACT §3, §6): what built-in processing and addons produce.
 * A custom conversion may not take any of them, nor `original`.
 */
export const BUILTIN_IMAGE_KEYS = ['smart_imaging', 'deepzoom'] as const;
export const BUILTIN_VIDEO_KEYS = [
  '360p-video',
  '480p-video',
  '720p-video',
  '1080p-video',
  'hls-video',
  '360p-wm-video',
  '480p-wm-video',
  '720p-wm-video',
  '1080p-wm-video',
  'clip_preview',
  'storyboard',
] as const;
export const IMAGE_ADDONS = ['auto_tagging', 'text_extraction', 'background_removal', 'face_recognition'] as const;
export const VIDEO_ADDONS = ['storyboard'] as const;

/** Keys no custom conversion may use (409 on Add Conversion). */
export const RESERVED_CONVERSION_KEYS: ReadonlySet<string> = new Set<string>([
  ...BUILTIN_IMAGE_KEYS,
  ...BUILTIN_VIDEO_KEYS,
  ...IMAGE_ADDONS,
  ...VIDEO_ADDONS,
  'original',
]);

/** A custom conversion name: 1-30 characters of `[A-Za-z0-9]` (spec "Conversion", CONTRACT §11). */
export const CUSTOM_CONVERSION_NAME = /^[A-Za-z0-9]{1,30}$/;

/** Set Public Access (spec endpoint 10): video keys that may be made public. */
export const PUBLIC_VIDEO_KEYS = [
  '360p-video',
  '360p-wm-video',
  '480p-video',
  '480p-wm-video',
  '720p-video',
  '720p-wm-video',
  '1080p-video',
  '1080p-wm-video',
  'hls-video',
] as const;
