import type { Logger } from '@dam/logging';
import type { Running } from './run-service';

export interface PollerOptions {
  name: string;
  intervalMs: number;
  logger: Logger;
  /** One pass; a pass still running when the next is due is never overlapped. */
  run(): Promise<unknown>;
  /** A first pass at once (default true): leftovers of a crash are usually found by the restart after it. */
  runAtStart?: boolean;
  /** A last pass when stopped (default false): what was gathered since the last one is not lost. */
  runAtStop?: boolean;
}

export interface Poller extends Running {
  /** Runs a pass now (waits for a running one first); tests use it instead of waiting for the timer. */
  runOnce(): Promise<void>;
  /**
   * Asks for a pass soon without waiting for it: at once when none is running, else right after the running one.
   * Any number of wakes during a pass make one more pass (a poller also woken by events: new work, a slot freed).
   */
  wake(): void;
}

/** A timer-driven background pass; `stop()` ends the timer and waits for the pass in flight. */
export function startPoller(options: PollerOptions): Poller {
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  let again = false;
  let stopped = false;
  const pass = (): Promise<void> =>
    options.run().then(
      () => undefined,
      (error: unknown) => options.logger.error({ err: error, poller: options.name }, 'poller pass failed'),
    );
  const tick = () => {
    if (busy || stopped) return;
    busy = true;
    running = pass().finally(() => {
      busy = false;
      if (again) {
        again = false;
        tick();
      }
    });
  };
  if (options.runAtStart ?? true) tick();
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    async runOnce() {
      await running;
      await pass();
    },
    wake() {
      if (busy) again = true;
      else tick();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      if (options.runAtStop) await pass();
    },
  };
}
