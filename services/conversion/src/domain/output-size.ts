import type { Fit, Size } from './conversion-spec';

export type { Size };

/** EXIF orientations 5-8 are rotated by 90°: after `.rotate()` the stored width and height swap. */
export function orientedSize(size: Size, orientation: number | undefined): Size {
  return orientation !== undefined && orientation >= 5 && orientation <= 8 ? { width: size.height, height: size.width } : size;
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

/** A resize box as the outputs and the hashes ask for it. */
export type ResizeBox = { width: number | null; height: number | null; fit: Fit; withoutEnlargement?: boolean };

/**
 * How much of the source's resolution a resize into `box` uses: the factor sharp scales the source by before any
 * crop (cover and outside cover the box, inside and contain fit in it, fill stretches each side on its own).
 */
export function resizeScale(source: Size, box: ResizeBox): number {
  const { width: bw, height: bh } = box;
  const sx = bw === null ? null : bw / source.width;
  const sy = bh === null ? null : bh / source.height;
  let scale: number;
  if (sx === null && sy === null) scale = 1;
  else if (sx === null || sy === null) scale = (sx ?? sy) as number;
  else if (box.fit === 'inside' || box.fit === 'contain') scale = Math.min(sx, sy);
  else scale = Math.max(sx, sy);
  return box.withoutEnlargement ? Math.min(1, scale) : scale;
}

/**
 * The size to decode the source at once so that every box in `boxes` can be made from those pixels without
 * losing detail: the largest resize among them, never above the source's own size (an enlargement is made from
 * the full-size pixels as sharp would make it).
 */
export function sharedDecodeSize(source: Size, boxes: readonly ResizeBox[]): Size {
  const scale = Math.min(1, Math.max(0, ...boxes.map((b) => resizeScale(source, b))));
  if (scale >= 1) return { width: source.width, height: source.height };
  return { width: Math.max(1, Math.ceil(source.width * scale)), height: Math.max(1, Math.ceil(source.height * scale)) };
}

/**
 * The box that makes `expected` (the output's size from the original, `outputSize`) out of pixels that were
 * scaled down already (a shared decode): where the size follows the source's aspect ratio (inside, outside, one
 * side given) it is asked for exactly, so the output has the same size whichever pixels it is made from; cover,
 * contain and fill give their box anyway.
 */
export function boxForScaled<B extends ResizeBox>(box: B, expected: Size): B {
  const exact = box.width !== null && box.height !== null && (box.fit === 'cover' || box.fit === 'contain' || box.fit === 'fill');
  if (exact) return box;
  return { ...box, width: expected.width, height: expected.height, fit: 'fill', withoutEnlargement: false };
}
