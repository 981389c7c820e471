import { z } from 'zod';
import { NoVideoStreamError, UnprocessableVideoError } from './errors';

/**
 * What a video is, normalised from ffprobe into one typed value. `width`/`height` are as displayed (a phone
 * clip stored landscape with a 90° rotation is portrait). The first six fields are the asset's video metadata
 * (CONTRACT §14); `hasAudio` and `rotation` are for planning.
 */
export interface VideoInfo {
  /** Seconds. */
  duration: number;
  width: number;
  height: number;
  video_codec: string;
  audio_codec: string | null;
  /** Bits per second of the whole file, when known. */
  bitrate: number | null;
  /** Frames per second, when known. */
  frame_rate: number | null;
  hasAudio: boolean;
  rotation: number;
}

const num = z.union([z.number(), z.string()]).optional();
const stream = z.looseObject({
  codec_type: z.string().optional(),
  codec_name: z.string().optional(),
  width: z.number().optional(),
  height: z.number().optional(),
  avg_frame_rate: z.string().optional(),
  r_frame_rate: z.string().optional(),
  duration: num,
  bit_rate: num,
  tags: z.record(z.string(), z.unknown()).optional(),
  side_data_list: z.array(z.looseObject({ rotation: num })).optional(),
  disposition: z.looseObject({ attached_pic: z.number().optional() }).optional(),
});
const probeSchema = z.looseObject({
  streams: z.array(stream).default([]),
  format: z.looseObject({ duration: num, bit_rate: num, format_name: z.string().optional() }).optional(),
});

const finite = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
};

/** `30000/1001` → 29.97; `0/0` and garbage → undefined. */
export function parseRate(rate: string | undefined): number | undefined {
  if (!rate) return undefined;
  const [n, d] = rate.split('/').map(Number);
  if (n === undefined || !Number.isFinite(n) || n <= 0) return undefined;
  const value = d === undefined ? n : d > 0 ? n / d : NaN;
  return Number.isFinite(value) && value > 0 && value < 1000 ? Math.round(value * 1000) / 1000 : undefined;
}

/** Rotation in degrees (0, 90, 180, 270) from the display matrix or the old `rotate` tag. */
function rotationOf(s: z.infer<typeof stream>): number {
  const raw = finite(s.side_data_list?.find((d) => d.rotation !== undefined)?.rotation) ?? finite(s.tags?.rotate) ?? 0;
  return (((Math.round(raw / 90) * 90) % 360) + 360) % 360;
}

/**
 * The typed description of a probed file. A file with no video stream (audio only, an image in a video
 * container) is NoVideoStreamError; one with no duration UnprocessableVideoError: no transcode can be made.
 */
export function videoInfoFrom(probe: unknown): VideoInfo {
  const parsed = probeSchema.safeParse(probe);
  if (!parsed.success) throw new UnprocessableVideoError('ffprobe described the file in a way that is not understood');
  const { streams, format } = parsed.data;
  const video = streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1 && (s.width ?? 0) > 0 && (s.height ?? 0) > 0);
  const audio = streams.find((s) => s.codec_type === 'audio');
  if (!video) {
    const seconds = finite(format?.duration) ?? finite(audio?.duration);
    const rate = finite(format?.bit_rate) ?? finite(audio?.bit_rate);
    throw new NoVideoStreamError(
      audio && seconds !== undefined && seconds > 0
        ? { duration: Math.round(seconds * 1000) / 1000, audio_codec: audio.codec_name ?? 'unknown', bitrate: rate === undefined ? null : Math.round(rate) }
        : undefined,
    );
  }
  const duration = finite(format?.duration) ?? finite(video.duration);
  if (duration === undefined || duration <= 0) throw new UnprocessableVideoError('the video has no duration');
  const rotation = rotationOf(video);
  const quarter = rotation === 90 || rotation === 270;
  const w = video.width ?? 0;
  const h = video.height ?? 0;
  const bitrate = finite(format?.bit_rate) ?? finite(video.bit_rate);
  return {
    duration: Math.round(duration * 1000) / 1000,
    width: quarter ? h : w,
    height: quarter ? w : h,
    video_codec: video.codec_name ?? 'unknown',
    audio_codec: audio?.codec_name ?? null,
    bitrate: bitrate === undefined ? null : Math.round(bitrate),
    frame_rate: parseRate(video.avg_frame_rate) ?? parseRate(video.r_frame_rate) ?? null,
    hasAudio: audio !== undefined,
    rotation,
  };
}

/** The asset's video metadata (CONTRACT §14). */
export const videoMetadata = (info: VideoInfo) => ({
  duration: info.duration,
  width: info.width,
  height: info.height,
  video_codec: info.video_codec,
  audio_codec: info.audio_codec,
  bitrate: info.bitrate,
  frame_rate: info.frame_rate,
});
