import type { VideoInfo } from '@dam/media';

/** At most this many thumbnails: a long video gets a longer interval instead of a larger sprite. */
export const MAX_THUMBS = 100;
export const STORYBOARD_COLUMNS = 10;
/** The long side of one thumbnail, in pixels. */
export const THUMB_SIZE = 160;

export const SPRITE_FILE = 'sprite.jpg';
export const VTT_FILE = 'storyboard.vtt';

export interface StoryboardPlan {
  /** Seconds between thumbnails (a whole number ≥ 1). */
  interval: number;
  thumbWidth: number;
  thumbHeight: number;
}

const evenAtLeast2 = (n: number): number => Math.max(2, Math.round(n / 2) * 2);

export function planStoryboard(info: Pick<VideoInfo, 'duration' | 'width' | 'height'>): StoryboardPlan {
  const interval = Math.max(1, Math.ceil(info.duration / MAX_THUMBS));
  const scale = Math.min(1, THUMB_SIZE / Math.max(info.width, info.height));
  return { interval, thumbWidth: evenAtLeast2(info.width * scale), thumbHeight: evenAtLeast2(info.height * scale) };
}

/** The sprite's grid for `count` thumbnails: rows of ten (fewer columns when there are fewer thumbnails). */
export function gridFor(count: number): { columns: number; rows: number } {
  const columns = Math.max(1, Math.min(STORYBOARD_COLUMNS, count));
  return { columns, rows: Math.max(1, Math.ceil(count / columns)) };
}

/** `75.5` → `00:01:15.500` */
export function vttTime(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms % 1000, 3)}`;
}

/**
 * The WebVTT file that maps time ranges to sprite regions (`sprite.jpg#xywh=x,y,w,h`, relative to the VTT).
 * Thumbnail i covers `[i·interval, (i+1)·interval)`; the last one runs to the end, so the cues cover the whole
 * duration whatever number of frames the sampling produced.
 */
export function storyboardVtt(plan: StoryboardPlan, count: number, duration: number): string {
  const { columns } = gridFor(count);
  const lines = ['WEBVTT', ''];
  for (let i = 0; i < count; i++) {
    const start = Math.min(i * plan.interval, duration);
    const end = i === count - 1 ? duration : Math.min((i + 1) * plan.interval, duration);
    const x = (i % columns) * plan.thumbWidth;
    const y = Math.floor(i / columns) * plan.thumbHeight;
    lines.push(`${vttTime(start)} --> ${vttTime(end)}`, `${SPRITE_FILE}#xywh=${x},${y},${plan.thumbWidth},${plan.thumbHeight}`, '');
  }
  return lines.join('\n');
}
