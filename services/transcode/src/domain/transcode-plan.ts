import { planStoryboard, type StoryboardPlan } from './storyboard';
import type { VideoInfo } from '@dam/media';

/** The rendition ladder: the short side in pixels, and the bit rate caps (kbit/s) that make HLS variants distinct. */
export const LADDER = {
  360: { videoKbps: 900, audioKbps: 96 },
  480: { videoKbps: 1500, audioKbps: 128 },
  720: { videoKbps: 3000, audioKbps: 128 },
  1080: { videoKbps: 5500, audioKbps: 160 },
} as const;
export type LadderStep = keyof typeof LADDER;
export const LADDER_STEPS: readonly LadderStep[] = [360, 480, 720, 1080];

export const HLS_KEY = 'hls-video';
export const CLIP_PREVIEW_KEY = 'clip_preview';
export const STORYBOARD_KEY = 'storyboard';

/** `720p-video` → {step: 720, watermark: false}; `720p-wm-video` → watermarked. */
export function renditionOfKey(key: string): { step: LadderStep; watermark: boolean } | undefined {
  const m = /^(360|480|720|1080)p-(wm-)?video$/.exec(key);
  if (!m) return undefined;
  return { step: Number(m[1]) as LadderStep, watermark: m[2] !== undefined };
}

/** One H.264/AAC MP4 encode: several outputs of one ffmpeg pass share the decode of the source. */
export interface Encode {
  /** `720p`, `720p-wm`, or `source` (an HLS variant of a source smaller than the ladder). */
  id: string;
  width: number;
  height: number;
  watermark: boolean;
  videoKbps: number;
  audioKbps: number;
}

export interface ClipPreviewPlan {
  start: number;
  duration: number;
  width: number;
  height: number;
}

export interface TranscodePlan {
  /** Distinct encodes, in ladder order; each is either an output of its own, an HLS variant, or both. */
  encodes: Encode[];
  /** Keys whose output is one encode's MP4. */
  files: Array<{ key: string; encode: string }>;
  /** The HLS variants (ids of encodes), smallest first. */
  hls?: { variants: string[] };
  clipPreview?: ClipPreviewPlan;
  storyboard?: StoryboardPlan;
  /** Keys not made because they do not apply (upscaling), with the reason: the job completes without them. */
  skipped: Record<string, string>;
  /** Keys that should have been made and cannot be (no watermark set). */
  errors: Record<string, string>;
}

export const even = (n: number): number => Math.max(2, Math.round(n / 2) * 2);

/** Output size with the short side at `short` pixels, keeping the aspect ratio; both sides even (H.264 4:2:0). */
export function scaledTo(info: Pick<VideoInfo, 'width' | 'height'>, short: number): { width: number; height: number } {
  if (info.width >= info.height) return { width: even((info.width * short) / info.height), height: even(short) };
  return { width: even(short), height: even((info.height * short) / info.width) };
}

const shortSide = (info: Pick<VideoInfo, 'width' | 'height'>): number => Math.min(info.width, info.height);

function encodeFor(info: VideoInfo, step: LadderStep, watermark: boolean): Encode {
  return { id: `${step}p${watermark ? '-wm' : ''}`, ...scaledTo(info, step), watermark, ...LADDER[step] };
}

/** A source smaller than the whole ladder still gets one HLS variant: itself, never upscaled. */
function sourceEncode(info: VideoInfo): Encode {
  const rates = LADDER[360];
  return { id: 'source', width: even(info.width), height: even(info.height), watermark: false, videoKbps: rates.videoKbps, audioKbps: rates.audioKbps };
}

/** The muted preview: six seconds from a tenth into the video (from the start for short clips), at most 360p. */
export function planClipPreview(info: VideoInfo, seconds = 6): ClipPreviewPlan {
  const start = info.duration > 20 ? Math.floor(info.duration / 10) : 0;
  const size = shortSide(info) > 360 ? scaledTo(info, 360) : { width: even(info.width), height: even(info.height) };
  return { start, duration: Math.min(seconds, Math.max(0.1, info.duration - start)), ...size };
}

/**
 * What to make of one video for the requested keys. Renditions are never upscaled: a rendition taller than the
 * source's short side is skipped, and says so. HLS carries every ladder step the source allows.
 */
export function planTranscodes(keys: readonly string[], info: VideoInfo, options: { watermark: boolean; clipSeconds?: number }): TranscodePlan {
  const encodes = new Map<string, Encode>();
  const plan: TranscodePlan = { encodes: [], files: [], skipped: {}, errors: {} };
  const short = shortSide(info);
  const add = (e: Encode): string => {
    if (!encodes.has(e.id)) encodes.set(e.id, e);
    return e.id;
  };
  for (const key of new Set(keys)) {
    const rendition = renditionOfKey(key);
    if (rendition) {
      if (rendition.step > short) {
        plan.skipped[key] = `the source is ${info.width}x${info.height}: a ${rendition.step}p rendition would upscale it`;
      } else if (rendition.watermark && !options.watermark) {
        plan.errors[key] = 'no watermark is set (conversions.watermark_asset_id)';
      } else {
        plan.files.push({ key, encode: add(encodeFor(info, rendition.step, rendition.watermark)) });
      }
    } else if (key === HLS_KEY) {
      const steps = LADDER_STEPS.filter((s) => s <= short);
      plan.hls = { variants: steps.length > 0 ? steps.map((s) => add(encodeFor(info, s, false))) : [add(sourceEncode(info))] };
    } else if (key === CLIP_PREVIEW_KEY) {
      plan.clipPreview = planClipPreview(info, options.clipSeconds);
    } else if (key === STORYBOARD_KEY) {
      plan.storyboard = planStoryboard(info);
    } else {
      plan.skipped[key] = 'not something the transcode service makes of a video';
    }
  }
  plan.encodes = [...encodes.values()].sort((a, b) => a.height * a.width - b.height * b.width || Number(a.watermark) - Number(b.watermark));
  return plan;
}
