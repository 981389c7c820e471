/**
 * The storyboard addon's cue file (`storyboard.vtt`, docs/openapi.yaml getMultiFileContent): WebVTT cues mapping
 * time ranges to regions of the sprite sheet (`sprite.jpg#xywh=x,y,w,h`). Each frame is drawn by an SVG whose
 * viewBox is its region of the sprite (attributes only, as the console's CSP wants).
 */
export interface StoryboardFrame {
  start: number;
  end: number;
  x: number;
  y: number;
  w: number;
  h: number;
}

/** "01:02:03.500" or "02:03.500" → seconds. */
export function vttTime(s: string): number | undefined {
  const m = /^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d{1,3})?)$/.exec(s.trim());
  if (!m) return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

export function parseStoryboardVtt(text: string): StoryboardFrame[] {
  const out: StoryboardFrame[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const times = /^\s*(\S+)\s+-->\s+(\S+)/.exec(lines[i] ?? '');
    if (!times) continue;
    const start = vttTime(times[1] ?? '');
    const end = vttTime(times[2] ?? '');
    const region = /#xywh=(\d+),(\d+),(\d+),(\d+)\s*$/.exec(lines[i + 1] ?? '');
    if (start === undefined || end === undefined || !region) continue;
    const [x, y, w, h] = region.slice(1).map(Number) as [number, number, number, number];
    if (w > 0 && h > 0) out.push({ start, end, x, y, w, h });
  }
  return out;
}

/** The sprite's size as the cues cover it (the <image> in each frame's SVG is drawn at it). */
export const spriteSize = (frames: readonly StoryboardFrame[]): { width: number; height: number } => ({
  width: frames.reduce((m, f) => Math.max(m, f.x + f.w), 0),
  height: frames.reduce((m, f) => Math.max(m, f.y + f.h), 0),
});

/** 75.5 → "1:15". */
export function clock(seconds: number): string {
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(mm).padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}
