import { TransformsBusyError } from '../domain/conversion.errors';

export interface SlotLimits {
  /** Transforms made at once: only these hold a decoded image, so they bound the memory. */
  concurrency: number;
  /** Callers waiting for a slot, first come first served; one more is refused at once. */
  queue: number;
  /** How long one waits for a slot before it is refused. */
  queueWaitMs: number;
  /** What a refused caller is told to wait before asking again. */
  retryAfterSeconds: number;
}

export interface SlotRequest {
  /** Resolves once the slot is the caller's (it must `release()` it); rejects TransformsBusyError or after `leave()`. */
  taken: Promise<void>;
  /** Leaves the queue if still in it (true): the caller then never takes a slot. False once the slot is taken. */
  leave(): boolean;
}

interface Waiter {
  start(): void;
  refuse(error: Error): void;
}

/**
 * The slots of on-demand transforms. A request arriving while all are taken waits a short, bounded time in a FIFO
 * queue rather than being refused at once: a miss under load takes seconds, and a browser's <img> never retries a
 * 503. The queue holds promises only (no decoded image), and both its length and each wait are bounded, so a burst
 * is still refused (TRANSFORMS_BUSY) rather than piling up work.
 */
export function transformSlots(limits: SlotLimits) {
  const waiting: Waiter[] = [];
  let running = 0;
  const busy = () => new TransformsBusyError(limits.concurrency, limits.retryAfterSeconds);
  const remove = (waiter: Waiter): boolean => {
    const at = waiting.indexOf(waiter);
    if (at < 0) return false;
    waiting.splice(at, 1);
    return true;
  };

  const request = (): SlotRequest => {
    // Checked and taken with no await in between: concurrent requests cannot both pass the last free slot.
    if (running < limits.concurrency) {
      running += 1;
      return { taken: Promise.resolve(), leave: () => false };
    }
    if (waiting.length >= limits.queue) return { taken: Promise.reject(busy()), leave: () => false };
    let waiter!: Waiter;
    const taken = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (remove(waiter)) reject(busy());
      }, limits.queueWaitMs);
      waiter = {
        start: () => (clearTimeout(timer), resolve()),
        refuse: (error) => (clearTimeout(timer), reject(error)),
      };
    });
    waiting.push(waiter);
    return {
      taken,
      leave: () => {
        if (!remove(waiter)) return false;
        waiter.refuse(new Error('the caller left the queue'));
        return true;
      },
    };
  };

  /** A finished transform hands its slot to the first waiter (the count unchanged), or frees it. */
  const release = (): void => {
    const next = waiting.shift();
    if (next) next.start();
    else running -= 1;
  };

  return { request, release, stats: () => ({ running, waiting: waiting.length }) };
}
