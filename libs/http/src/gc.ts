import { setFlagsFromString } from 'node:v8';

/**
 * Turns V8's incremental marking off, for a service whose work is bytes and native code rather than JavaScript
 * (conversion: libvips on its own threads; upload: streams of file bytes). V8 judges that process's collections
 * cheap, keeps the old generation's limit a few MB above what lives, and under load started a full mark every few
 * hundred milliseconds: 20-30 per 20 three-output conversion jobs (about 1 s of main-thread time, 6 % of the
 * service's CPU), 9 in upload for 24 uploads of 4 MB. Without it a full collection runs only when the old
 * generation is really full (2-4 in the same runs), one pause of 10-40 ms on a heap of ~60 MB, which jobs and
 * uploads do not notice. Measured: image throughput 0.78-0.81 → 0.86-0.87 of plain sharp; upload CPU per 12
 * uploads 0.55-0.72 → 0.37-0.47 s (docs/benchmarks.md). The addon service too (WASM and native
 * models): a full mark came about every 4 s there and put 20-40 ms of marking steps into the detection it fell in
 * (docs/benchmarks.md, Addons). Call it first thing in main.
 */
export function collectGarbageInFewFullPauses(env: NodeJS.ProcessEnv = process.env): void {
  // GC_INCREMENTAL_MARKING=true keeps V8's default (less memory between collections, more CPU).
  if (env.GC_INCREMENTAL_MARKING === 'true') return;
  setFlagsFromString('--no-incremental-marking');
}
