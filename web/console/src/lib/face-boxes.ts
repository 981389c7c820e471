/**
 * face_recognition's boxes (CONTRACT §8: `{faces: [{box: {x, y, width, height}, confidence, person_id}]}`, in the
 * original's upright pixels) as shares of the picture, so one SVG overlay drawn in a 0-100 viewBox lies on the
 * image at whatever size it is displayed (a preview conversion is smaller than the original; the page reflows).
 */
export interface FaceBox {
  /** Left, top, width and height in per cent of the picture, clipped to it. */
  x: number;
  y: number;
  width: number;
  height: number;
  label: string;
}

interface RawFace {
  box?: { x?: unknown; y?: unknown; width?: unknown; height?: unknown } | unknown;
  confidence?: unknown;
  person_id?: unknown;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The faces of a result scaled from the original's `width` × `height` to per cent; boxes off the picture are left out. */
export function faceBoxes(result: unknown, natural: { width: number; height: number }): FaceBox[] {
  const faces = (result as { faces?: unknown } | undefined)?.faces;
  if (!Array.isArray(faces) || !(natural.width > 0) || !(natural.height > 0)) return [];
  const out: FaceBox[] = [];
  for (const [i, f] of (faces as RawFace[]).entries()) {
    const b = (f?.box ?? {}) as Record<string, unknown>;
    const [x, y, w, h] = [num(b.x), num(b.y), num(b.width), num(b.height)];
    if (x === undefined || y === undefined || w === undefined || h === undefined || w <= 0 || h <= 0) continue;
    const box = clip(scaleBox({ x, y, width: w, height: h }, natural, { width: 100, height: 100 }), 100, 100);
    if (!box) continue;
    const conf = num(f.confidence);
    const who = f.person_id === undefined || f.person_id === null ? `Face ${i + 1}` : `Person ${String(f.person_id)}`;
    out.push({ ...box, label: conf === undefined ? who : `${who} (${Math.round(conf * 100)} %)` });
  }
  return out;
}

type Rect = { x: number; y: number; width: number; height: number };

/** A box from one size of the picture to another (natural pixels → displayed pixels, or → per cent). */
export function scaleBox(box: Rect, from: { width: number; height: number }, to: { width: number; height: number }): Rect {
  const sx = to.width / from.width;
  const sy = to.height / from.height;
  return { x: box.x * sx, y: box.y * sy, width: box.width * sx, height: box.height * sy };
}

/** The part of a box inside [0, w] × [0, h], or nothing when none is. */
export function clip(box: Rect, w: number, h: number): Rect | undefined {
  const x0 = Math.max(0, box.x);
  const y0 = Math.max(0, box.y);
  const x1 = Math.min(w, box.x + box.width);
  const y1 = Math.min(h, box.y + box.height);
  if (x1 <= x0 || y1 <= y0) return undefined;
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

const WEB_IMAGES = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif']);

/**
 * The picture to draw the boxes on: the original when a browser shows it and it is small enough, else the largest
 * image conversion with the original's proportions (a cropped one, such as a `cover` thumbnail or smart_imaging's
 * crop, would put the boxes beside the faces).
 */
export function faceImageKey(
  conversions: Record<string, { width?: number | null | undefined; height?: number | null | undefined }>,
  contentType: string,
  size: number,
  natural: { width: number; height: number },
  maxOriginalBytes = 8 * 1024 * 1024,
): string | undefined {
  if (WEB_IMAGES.has(contentType) && size <= maxOriginalBytes) return 'original';
  if (!(natural.width > 0 && natural.height > 0)) return undefined;
  const ratio = natural.width / natural.height;
  let best: { key: string; pixels: number } | undefined;
  for (const [key, c] of Object.entries(conversions)) {
    if (!c.width || !c.height || ['smart_imaging', 'background_removal', 'storyboard', 'deepzoom'].includes(key)) continue;
    if (Math.abs(c.width / c.height - ratio) / ratio > 0.01) continue;
    const pixels = c.width * c.height;
    if (!best || pixels > best.pixels) best = { key, pixels };
  }
  return best?.key;
}
