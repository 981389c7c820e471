import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { run } from './exec';

export interface VideoSpec {
  seconds: number;
  width: number;
  height: number;
  fps?: number;
  /** A sine tone as AAC (default true). */
  audio?: boolean;
  /** Seconds between key frames of the source (default: x264's, every 250 frames). */
  keyframeSeconds?: number;
}

/**
 * A real H.264/AAC MP4 made with ffmpeg's lavfi sources (a moving test pattern with a running counter and a
 * tone), written to `file`, for tests and benchmarks.
 */
export async function writeVideo(file: string, spec: VideoSpec): Promise<void> {
  const fps = spec.fps ?? 25;
  const audio = spec.audio ?? true;
  await run(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `testsrc2=size=${spec.width}x${spec.height}:rate=${fps}:duration=${spec.seconds}`,
      ...(audio ? ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${spec.seconds}`] : []),
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      ...(spec.keyframeSeconds ? ['-g', String(Math.round(spec.keyframeSeconds * fps))] : []),
      ...(audio ? ['-c:a', 'aac', '-b:a', '96k'] : []),
      '-movflags',
      '+faststart',
      file,
    ],
    {},
    600_000,
  );
}

/** `writeVideo` into memory. */
export async function makeVideo(spec: VideoSpec): Promise<Buffer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dam-video-'));
  try {
    const file = path.join(dir, 'video.mp4');
    await writeVideo(file, spec);
    return await readFile(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ProbedStream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  duration?: string;
  profile?: string;
}

/** ffprobe's view of a file or URL (format and streams). */
export async function ffprobe(input: string): Promise<{ format: { duration?: string; format_name?: string }; streams: ProbedStream[] }> {
  return JSON.parse(await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', input])) as {
    format: { duration?: string; format_name?: string };
    streams: ProbedStream[];
  };
}
