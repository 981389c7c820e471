import { spawn } from 'node:child_process';
import { UnprocessableVideoError } from './errors';

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
  /**
   * Kill the tool when it prints nothing (no progress block, no error) for this long: a stuck read or a hung
   * filter ends as ToolStalledError instead of holding the job for ever. Default 5 minutes.
   */
  stallMs?: number;
}

export const DEFAULT_STALL_MS = 5 * 60_000;

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
    // Any output is a sign of life (ffmpeg writes a progress block every half second while it works).
    const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    let stalled = false;
    let watchdog: NodeJS.Timeout | undefined;
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        stalled = true;
        child.kill('SIGKILL');
      }, stallMs);
    };
    alive();
    child.stdout.on('data', alive);
    child.stderr.on('data', alive);
    child.on('error', (error) => {
      clearTimeout(watchdog);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      if (stalled) reject(new ToolStalledError(bin, stallMs, tail(stderr)));
      else if (code === 0) resolve(stdout);
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

/** A tool printed nothing for `stallMs` and was killed: the input makes it hang, retrying will not help. */
export class ToolStalledError extends Error {
  override readonly name = 'ToolStalledError';
  constructor(
    readonly tool: string,
    readonly stallMs: number,
    readonly reason: string,
  ) {
    super(`${tool.split('/').pop() ?? tool} made no progress for ${Math.round(stallMs / 1000)} s and was stopped${reason ? `: ${reason}` : ''}`);
  }
}

/** A small typed wrapper over `spawn` for ffmpeg and ffprobe (no archived wrapper library). */
export class Ffmpeg {
  constructor(
    private readonly tools: FfmpegTools,
    private readonly stallMs = DEFAULT_STALL_MS,
  ) {}

  /**
   * Runs ffmpeg with `-progress pipe:1` (its output time goes to `onProgress`, and it is the watchdog's sign of
   * life); rejects with ffmpeg's reason, or ToolStalledError when it stops making progress.
   */
  async run(args: string[], options: RunOptions = {}): Promise<void> {
    const base = ['-hide_banner', '-nostdin', '-y', '-loglevel', 'error', '-nostats', '-progress', 'pipe:1'];
    await run(this.tools.ffmpeg, [...base, ...args], { stallMs: this.stallMs, ...options });
  }

  /**
   * ffprobe's JSON description of a file (format and streams). A file ffprobe cannot read is not a video
   * however often it is retried: UnprocessableVideoError, with ffprobe's reason.
   */
  async probe(file: string, options: RunOptions = {}): Promise<unknown> {
    const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file];
    try {
      return JSON.parse(await run(this.tools.ffprobe, args, { stallMs: this.stallMs, ...options, collect: true })) as unknown;
    } catch (error) {
      if (error instanceof ToolStalledError) throw new UnprocessableVideoError(`not a readable video: ${error.message}`, error);
      if (error instanceof ToolFailedError) throw new UnprocessableVideoError(`not a readable video: ${error.reason || 'ffprobe failed'}`, error);
      throw error;
    }
  }
}

const runs = async (bin: string): Promise<boolean> => {
  try {
    await run(bin, ['-hide_banner', '-version'], { stallMs: 10_000 });
    return true;
  } catch {
    return false;
  }
};

/** The npm installer packages' binaries (`@ffmpeg-installer/ffmpeg`, `@ffprobe-installer/ffprobe`), when installed. */
export function installerTools(): Partial<FfmpegTools> {
  const pathOf = (pkg: string): string | undefined => {
    try {
      // Optional: not a dependency of the suite; an operator without a system ffmpeg may add them.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const found = (require(pkg) as { path?: unknown }).path;
      return typeof found === 'string' ? found : undefined;
    } catch {
      return undefined;
    }
  };
  const ffmpeg = pathOf('@ffmpeg-installer/ffmpeg');
  const ffprobe = pathOf('@ffprobe-installer/ffprobe');
  return { ...(ffmpeg ? { ffmpeg } : {}), ...(ffprobe ? { ffprobe } : {}) };
}

/**
 * Which binaries to run: the configured ones (FFMPEG_PATH / FFPROBE_PATH, by default the system's from PATH)
 * when they answer, else those of the npm installer packages when installed. Throws when a tool has neither.
 */
export async function resolveTools(
  configured: FfmpegTools,
  fallback: () => Partial<FfmpegTools> = installerTools,
): Promise<FfmpegTools & { from: Record<keyof FfmpegTools, 'configured' | 'installer'> }> {
  const alternatives = fallback();
  const pick = async (tool: keyof FfmpegTools): Promise<[string, 'configured' | 'installer']> => {
    if (await runs(configured[tool])) return [configured[tool], 'configured'];
    const other = alternatives[tool];
    if (other && (await runs(other))) return [other, 'installer'];
    throw new Error(
      `${tool} does not run: "${configured[tool]}" (${tool === 'ffmpeg' ? 'FFMPEG_PATH' : 'FFPROBE_PATH'}) failed and no installer package provides it`,
    );
  };
  const [ffmpeg, ffprobe] = await Promise.all([pick('ffmpeg'), pick('ffprobe')]);
  return { ffmpeg: ffmpeg[0], ffprobe: ffprobe[0], from: { ffmpeg: ffmpeg[1], ffprobe: ffprobe[1] } };
}
