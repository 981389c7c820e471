// Prints the TEST_TIME_SCALE for this machine as it is now (test/run-all.sh uses it when none is given): a fixed
// CPU-bound workload (hashing and integer arithmetic, one thread, as a test's Node processes mostly are) timed five
// times, its median against the reference machine's, doubled for headroom and never below 2. A machine twice as
// slow, or as busy, gets twice the time; a passing test takes no longer for it (limits only bound waits).
// `node test/time-scale.mjs --explain` also prints the timings.
import { createHash } from 'node:crypto';

/** The workload's median on the reference machine (2 cores, idle; docs/operations.md, "Tests on a slower machine"). */
const REFERENCE_MS = 330;
const HEADROOM = 2;

function once() {
  const started = process.hrtime.bigint();
  let digest = Buffer.alloc(64);
  for (let i = 0; i < 200_000; i++) digest = createHash('sha256').update(digest).digest();
  let x = 0;
  for (let i = 0; i < 3e7; i++) x = (x + i * 7) % 1_000_003;
  if (x < 0) throw new Error('unreachable: keeps the loop from being optimised away');
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const runs = Array.from({ length: 5 }, once).sort((a, b) => a - b);
const median = runs[2];
const scale = Math.min(10, Math.max(2, Math.round((HEADROOM * median * 10) / REFERENCE_MS) / 10));
if (process.argv.includes('--explain')) {
  console.error(`runs ${runs.map(Math.round).join(' ')} ms, median ${Math.round(median)} ms, reference ${REFERENCE_MS} ms`);
}
console.log(scale);
