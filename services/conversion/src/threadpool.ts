// main.ts's first import, ahead of telemetry: libuv reads UV_THREADPOOL_SIZE once, when its pool first starts, and
// any file read (OpenTelemetry's resource detection, the first log file) starts it.

/** libuv's own ceiling on the pool. */
const MAX_THREADS = 1024;

const positive = (value: string | undefined, fallback: number): number => (value && /^[1-9]\d*$/.test(value) ? Number(value) : fallback);

/**
 * libuv pool threads conversion needs: sharp runs each image's work on that pool, as Node does every file read
 * and write. libuv's default of 4 equals CONCURRENCY's: four jobs' encodes held every thread, and on-demand
 * transforms (their own TRANSFORM_CONCURRENCY slots, meant to run besides the jobs) and the jobs' own file reads
 * and writes waited behind them (docs/benchmarks.md, "conversion keeps up": "The libuv pool"). So: a thread per job and per transform
 * slot, and two for files. The defaults are config.ts's; an invalid value is refused there, after this.
 */
export function threadPoolSize(env: NodeJS.ProcessEnv): number {
  return Math.min(MAX_THREADS, positive(env.CONCURRENCY, 4) + positive(env.TRANSFORM_CONCURRENCY, 2) + 2);
}

// An operator's own UV_THREADPOOL_SIZE wins.
process.env.UV_THREADPOOL_SIZE ||= String(threadPoolSize(process.env));
