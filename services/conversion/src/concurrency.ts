import { positiveInt } from '@dam/config';

/** conversion's two kinds of work at once (config.ts spreads these): they also size libuv's pool (threadpool.ts). */
export const concurrencyEnv = {
  /**
   * Images converted at once by this process (each uses one libvips thread). Twice the cores of a small machine:
   * while one job waits on storage or NATS another keeps the core busy.
   */
  CONCURRENCY: positiveInt(4),
  /**
   * On-demand transforms made at once by this process, besides the CONCURRENCY jobs: only these decode, so they
   * bound the memory; more wait in the queue (TRANSFORM_QUEUE).
   */
  TRANSFORM_CONCURRENCY: positiveInt(2),
};

/** libuv's own ceiling on the pool. */
const MAX_THREADS = 1024;

/** One of the two settings as config.ts parses it; its default where config.ts will refuse the value, after this. */
const setting = (env: NodeJS.ProcessEnv, name: keyof typeof concurrencyEnv): number => {
  const parsed = concurrencyEnv[name].safeParse(env[name]);
  return parsed.success ? parsed.data : concurrencyEnv[name].parse(undefined);
};

/**
 * libuv pool threads conversion needs: sharp runs each image's work on that pool, as Node does every file read
 * and write. libuv's default of 4 equals CONCURRENCY's: four jobs' encodes held every thread, and on-demand
 * transforms (their own TRANSFORM_CONCURRENCY slots, meant to run besides the jobs) and the jobs' own file reads
 * and writes waited behind them (docs/benchmarks.md, "conversion keeps up": "The libuv pool"). So: a thread per job
 * and per transform slot, and two for files.
 */
export function threadPoolSize(env: NodeJS.ProcessEnv): number {
  return Math.min(MAX_THREADS, setting(env, 'CONCURRENCY') + setting(env, 'TRANSFORM_CONCURRENCY') + 2);
}
