import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's `gc()`, without starting node with --expose-gc (jest's workers are not). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * The JavaScript heap that `calls` runs of `fn` leave behind, in bytes per call: the heap in use after full
 * collections, after the runs against before them. Half as many runs first, not measured: what the first runs fill
 * once (modules, optimized code and its feedback, caches of a fixed size) is not counted. What a call only
 * allocates and drops reads about 0; what it keeps reads its size.
 */
export async function retainedBytesPerCall(fn: () => Promise<unknown> | unknown, calls: number): Promise<number> {
  const gc = collector();
  for (let i = 0; i < Math.ceil(calls / 2); i++) await fn();
  const settle = async () => {
    // Two rounds: a finalizer or a weak callback run by the first can free more in the second.
    for (let i = 0; i < 2; i++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return process.memoryUsage().heapUsed;
  };
  const before = await settle();
  for (let i = 0; i < calls; i++) await fn();
  return ((await settle()) - before) / calls;
}
