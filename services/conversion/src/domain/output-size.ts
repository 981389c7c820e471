import type { Fit } from './conversion-spec';

export interface Size {
  width: number;
  height: number;
}

/** EXIF orientations 5-8 are rotated by 90°: after `.rotate()` the stored width and height swap. */
export function orientedSize(size: Size, orientation: number | undefined): Size {
  return orientation !== undefined && orientation >= 5 && orientation <= 8
    ? { width: size.height, height: size.width }
    : size;
}

/**
 * The size sharp produces for a resize of `source` into the box (same rules as sharp's resize, with
 * enlargement allowed). With one side missing the other follows the aspect ratio whatever the fit.
 */
export function outputSize(source: Size, box: { width: number | null; height: number | null; fit: Fit; withoutEnlargement?: boolean }): Size {
  const { width: sw, height: sh } = source;
  if (sw <= 0 || sh <= 0) throw new RangeError('source size must be positive');
  if (box.withoutEnlargement) {
    // sharp keeps the source size when the resize would enlarge it: fit inside a box no larger than the source.
    const wide = box.width ?? Infinity;
    const high = box.height ?? Infinity;
    if (box.fit === 'inside' && sw <= wide && sh <= high) return { width: sw, height: sh };
  }
  const { width: bw, height: bh, fit } = box;
  if (bw === null && bh === null) return { width: sw, height: sh };
  if (bw === null) return { width: Math.max(1, Math.round((sw * (bh as number)) / sh)), height: bh as number };
  if (bh === null) return { width: bw, height: Math.max(1, Math.round((sh * bw) / sw)) };
  switch (fit) {
    case 'cover':
    case 'contain':
    case 'fill':
      // cover crops, contain letterboxes, fill stretches: all three give exactly the box.
      return { width: bw, height: bh };
    case 'inside':
    case 'outside': {
      const scale = fit === 'inside' ? Math.min(bw / sw, bh / sh) : Math.max(bw / sw, bh / sh);
      return { width: Math.max(1, Math.round(sw * scale)), height: Math.max(1, Math.round(sh * scale)) };
    }
  }
}
