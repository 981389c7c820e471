import { spawn } from 'node:child_process';
import { UnprocessableVideoError } from '../domain/transcode.errors';

export interface FfmpegTools {
  /** `ffmpeg` binary (FFMPEG_PATH; default the system's). */
  ffmpeg: string;
  /** `ffprobe` binary (FFPROBE_PATH). */
  ffprobe: string;
}

export interface RunOptions {
  /** Called with the output time reached (seconds), parsed from `-progress pipe:1`. */
  onProgress?: (seconds: number) => void;
  signal?: AbortSignal;
}

/** What ffmpeg printed last on stderr: its reason when it fails (the first lines are the banner). */
const STDERR_TAIL = 2000;

const tail = (text: string): string => text.trim().split('\n').slice(-6).join(' | ').slice(-STDERR_TAIL);

/**
 * Parses ffmpeg's `-progress` key=value stream: the output time reached, in seconds, for each block. `out_time_us`
 * is what ffmpeg 5+ writes (`out_time_ms` is the same value in microseconds, kept for older builds).
 */
export function progressSeconds(line: string): number | undefined {
  const m = /^out_time_(?:us|ms)=(\d+)$/.exec(line.trim());
  return m ? Number(m[1]) / 1e6 : undefined;
}

/** Spawns one tool, collects stdout, keeps the tail of stderr, and rejects with it on a non-zero exit. */
function run(bin: string, args: string[], options: RunOptions & { collect?: boolean }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(options.signal ? { signal: options.signal } : {}) });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (options.collect) stdout += chunk;
      if (!options.onProgress) return;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const seconds = progressSeconds(line);
        if (seconds !== undefined) options.onProgress(seconds);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4 * STDERR_TAIL);
    });
    child.on('error', (error) => reject(error));
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new ToolFailedError(bin, code, signal, tail(stderr)));
    });
  });
}

/** A tool ended with an error: `reason` is the end of what it printed. */
export class ToolFailedError extends Error {
  override readonly name = 'ToolFailedError';
  constructor(
    readonly tool: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly reason: string,
  ) {
    super(`${tool.split('/').pop() ?? tool} failed (${signal ?? `exit ${code}`}): ${reason || 'no output'}`);
  }
}

/** A small typed wrapper over `spawn` for ffmpeg and ffprobe (no archived wrapper library). */
export class Ffmpeg {
  constructor(private readonly tools: FfmpegTools) {}

  /** Runs ffmpeg with `-progress pipe:1` so `onProgress` sees the output time; rejects with ffmpeg's reason. */
  async run(args: string[], options: RunOptions = {}): Promise<void> {
    const base = ['-hide_banner', '-nostdin', '-y', '-loglevel', 'error', '-nostats'];
    const progress = options.onProgress ? ['-progress', 'pipe:1'] : [];
    await run(this.tools.ffmpeg, [...base, ...progress, ...args], options);
  }

  /**
   * ffprobe's JSON description of a file (format and streams). A file ffprobe cannot read is not a video
   * however often it is retried: UnprocessableVideoError, with ffprobe's reason.
   */
  async probe(file: string, options: RunOptions = {}): Promise<unknown> {
    const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file];
    try {
      return JSON.parse(await run(this.tools.ffprobe, args, { ...options, collect: true })) as unknown;
    } catch (error) {
      if (error instanceof ToolFailedError) throw new UnprocessableVideoError(`not a readable video: ${error.reason || 'ffprobe failed'}`, error);
      throw error;
    }
  }

  /** Whether both tools answer (readiness). */
  async available(): Promise<boolean> {
    try {
      await run(this.tools.ffmpeg, ['-hide_banner', '-version'], {});
      await run(this.tools.ffprobe, ['-hide_banner', '-version'], {});
      return true;
    } catch {
      return false;
    }
  }
}
