/**
 * Token buckets per caller: `burst` requests at once, refilled at `perMinute`. In memory, so the limit is per
 * gateway replica; a shared store is a later step (docs/operations.md).
 */
export interface RateLimitDecision {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until one token is back (only meaningful when refused). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly perMinute: number,
    readonly burst: number,
    /** Above this many callers, buckets that are full again are dropped (they carry no information). */
    private readonly maxKeys = 100_000,
  ) {
    this.perMs = perMinute / 60_000;
  }

  take(key: string, nowMs: number = Date.now()): RateLimitDecision {
    const bucket = this.refill(this.buckets.get(key) ?? { tokens: this.burst, updatedMs: nowMs }, nowMs);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    // At most one sweep a second: with many live callers a sweep per request would cost O(callers) each time.
    if (this.buckets.size > this.maxKeys && nowMs - this.lastSweepMs >= 1000) this.sweep(nowMs);
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      retryAfterSeconds: allowed ? 0 : Math.ceil((1 - bucket.tokens) / this.perMs / 1000),
    };
  }

  private refill(bucket: Bucket, nowMs: number): Bucket {
    const elapsed = Math.max(0, nowMs - bucket.updatedMs);
    return { tokens: Math.min(this.burst, bucket.tokens + elapsed * this.perMs), updatedMs: nowMs };
  }

  private sweep(nowMs: number): void {
    this.lastSweepMs = nowMs;
    for (const [key, bucket] of this.buckets) {
      if (this.refill(bucket, nowMs).tokens >= this.burst) this.buckets.delete(key);
    }
  }

  get size(): number {
    return this.buckets.size;
  }
}
