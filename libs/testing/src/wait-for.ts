import { scaled } from './time-scale';

export interface WaitForOptions {
  /** The limit on the reference machine (10 s by default), stretched by TEST_TIME_SCALE (time-scale.ts). */
  timeoutMs?: number;
  intervalMs?: number;
  /** Used in the timeout error message. */
  description?: string;
}

/**
 * Polls `fn` until it returns something other than `undefined`, `null` or `false`; a thrown error counts as
 * "not yet". Returns that value; on timeout throws, naming the last error seen.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, options: WaitForOptions = {}): Promise<Exclude<T, false | null | undefined>> {
  const timeoutMs = scaled(options.timeoutMs ?? 10_000);
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value as Exclude<T, false | null | undefined>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const what = options.description ?? 'condition';
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`waitFor: ${what} not met after ${timeoutMs} ms${cause}`, { cause: lastError });
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** true when GET url answers 200. */
export async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(scaled(2000)) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}
