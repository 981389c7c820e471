import type { ClipPreviewPlan, Encode } from './transcode-plan';
import type { StoryboardPlan } from './storyboard';

export interface EncoderSettings {
  /** x264 preset (X264_PRESET, default `veryfast`: the speed that suits few cores). */
  preset: string;
  crf: number;
  /** HLS segment length; every rendition gets a key frame at each multiple, so variants switch cleanly. */
  segmentSeconds: number;
  /** Encoder threads per ffmpeg process (0: ffmpeg's choice). */
  threads: number;
}

const threadArgs = (s: EncoderSettings): string[] => (s.threads > 0 ? ['-threads', String(s.threads)] : []);

/**
 * The filter graph of one pass: the source decoded once, split into one scaler per encode; a watermarked
 * encode overlays the watermark (a fifth of the width, bottom right, 70 % opaque).
 */
export function encodeFilterGraph(encodes: readonly Encode[], hasWatermark: boolean): string {
  const parts = [`[0:v]split=${encodes.length}${encodes.map((_, i) => `[s${i}]`).join('')}`];
  const marked = encodes.map((e, i) => ({ e, i })).filter(({ e }) => e.watermark);
  if (marked.length > 0) {
    if (!hasWatermark) throw new Error('a watermarked encode needs the watermark input');
    parts.push(`[1:v]format=rgba,colorchannelmixer=aa=0.7,split=${marked.length}${marked.map(({ i }) => `[w${i}]`).join('')}`);
  }
  encodes.forEach((e, i) => {
    if (!e.watermark) {
      parts.push(`[s${i}]scale=${e.width}:${e.height},setsar=1[v${i}]`);
      return;
    }
    const markWidth = Math.max(2, Math.round(e.width / 5 / 2) * 2);
    const margin = Math.round(Math.min(e.width, e.height) * 0.03);
    parts.push(`[s${i}]scale=${e.width}:${e.height},setsar=1[b${i}]`);
    parts.push(`[w${i}]scale=${markWidth}:-2[m${i}]`);
    parts.push(`[b${i}][m${i}]overlay=main_w-overlay_w-${margin}:main_h-overlay_h-${margin}:eof_action=repeat[v${i}]`);
  });
  return parts.join(';');
}

/** H.264 (yuv420p) + AAC MP4 with `+faststart`, capped per rendition so HLS variants differ in bit rate. */
function h264Output(e: Encode, s: EncoderSettings, withAudio: boolean): string[] {
  return [
    '-c:v',
    'libx264',
    '-preset',
    s.preset,
    '-crf',
    String(s.crf),
    '-pix_fmt',
    'yuv420p',
    '-profile:v',
    'high',
    '-maxrate',
    `${e.videoKbps}k`,
    '-bufsize',
    `${2 * e.videoKbps}k`,
    '-force_key_frames',
    `expr:gte(t,n_forced*${s.segmentSeconds})`,
    ...(withAudio ? ['-c:a', 'aac', '-b:a', `${e.audioKbps}k`, '-ac', '2'] : ['-an']),
    '-movflags',
    '+faststart',
  ];
}

/** One ffmpeg pass for every encode: `outputs[i]` is the MP4 of `encodes[i]`. */
export function encodeArgs(opts: {
  source: string;
  watermark?: string;
  encodes: readonly Encode[];
  outputs: readonly string[];
  hasAudio: boolean;
  settings: EncoderSettings;
}): string[] {
  const { encodes, outputs, settings } = opts;
  if (encodes.length === 0 || encodes.length !== outputs.length) throw new Error('one output per encode');
  const args = ['-i', opts.source, ...(opts.watermark ? ['-i', opts.watermark] : [])];
  args.push('-filter_complex', encodeFilterGraph(encodes, opts.watermark !== undefined), ...threadArgs(settings), '-max_muxing_queue_size', '1024');
  encodes.forEach((e, i) => {
    args.push('-map', `[v${i}]`, ...(opts.hasAudio ? ['-map', '0:a:0'] : []), ...h264Output(e, settings, opts.hasAudio), outputs[i] as string);
  });
  return args;
}

/** HLS packaging of finished MP4s, streams copied (no second encode): one variant playlist + segments per input. */
export function hlsPackageArgs(variants: ReadonlyArray<{ input: string; playlist: string; segments: string }>, segmentSeconds: number): string[] {
  const args = variants.flatMap((v) => ['-i', v.input]);
  variants.forEach((v, i) => {
    args.push(
      '-map',
      String(i),
      '-c',
      'copy',
      '-f',
      'hls',
      '-hls_time',
      String(segmentSeconds),
      '-hls_playlist_type',
      'vod',
      '-hls_flags',
      'independent_segments',
      '-hls_segment_type',
      'mpegts',
      '-hls_segment_filename',
      v.segments,
      v.playlist,
    );
  });
  return args;
}

/** The muted preview: input seeking (fast), no audio, at most 360p. */
export function clipPreviewArgs(source: string, clip: ClipPreviewPlan, settings: EncoderSettings, output: string): string[] {
  return [
    '-ss',
    String(clip.start),
    '-i',
    source,
    '-t',
    String(clip.duration),
    '-an',
    '-sn',
    '-dn',
    '-vf',
    `scale=${clip.width}:${clip.height},setsar=1`,
    ...threadArgs(settings),
    '-c:v',
    'libx264',
    '-preset',
    settings.preset,
    '-crf',
    String(settings.crf + 3),
    '-pix_fmt',
    'yuv420p',
    '-movflags',
    '+faststart',
    output,
  ];
}

/** Storyboard frames: one scaled JPEG every `interval` seconds (`pattern` like `dir/%04d.jpg`). */
export function storyboardFramesArgs(source: string, plan: StoryboardPlan, settings: EncoderSettings, pattern: string): string[] {
  return [
    '-i',
    source,
    '-an',
    '-sn',
    '-dn',
    '-vf',
    `fps=1/${plan.interval},scale=${plan.thumbWidth}:${plan.thumbHeight},setsar=1`,
    ...threadArgs(settings),
    '-q:v',
    '4',
    pattern,
  ];
}

/** The sprite sheet: the frames tiled `columns` × `rows` into one JPEG. */
export function spriteArgs(pattern: string, grid: { columns: number; rows: number }, output: string): string[] {
  return ['-framerate', '1', '-i', pattern, '-vf', `tile=${grid.columns}x${grid.rows}`, '-frames:v', '1', '-q:v', '4', output];
}
