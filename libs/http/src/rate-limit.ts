import type { RequestHandler, Response } from 'express';
import { isAppError, rateLimited } from '@dam/errors';

/**
 * Token buckets per caller: `burst` requests at once, refilled at `perMinute`. In memory, so the limit is per
 * replica of an edge; a shared store is a later step (docs/operations.md).
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

  /** Whether `key` has a whole token now, without spending it. */
  has(key: string, nowMs: number = Date.now()): { allowed: boolean; retryAfterSeconds: number } {
    const bucket = this.buckets.get(key);
    if (!bucket) return { allowed: true, retryAfterSeconds: 0 };
    const { tokens } = this.refill(bucket, nowMs);
    return { allowed: tokens >= 1, retryAfterSeconds: tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.perMs / 1000) };
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

export interface Budget {
  perMinute: number;
  burst: number;
}

export interface EdgeLimitOptions {
  /** Every request from one client address, spent before anything else (credentials unchecked yet). */
  perAddress?: Budget;
  /**
   * Failed authentications per client address: once spent, the address is answered 429 before its
   * credentials are even looked up, so a flood of bogus keys or tokens costs auth nothing.
   */
  authFailuresPerAddress?: Budget;
  /** Per authenticated caller (user or API key), spent after authentication; sets X-RateLimit-* headers. */
  perPrincipal?: Budget;
}

const limiterOf = (b: Budget | undefined): RateLimiter | undefined => (b && b.perMinute > 0 ? new RateLimiter(b.perMinute, b.burst) : undefined);

const SLOW_DOWN = 'Too many requests: slow down and retry after the given time';

/**
 * The request limits of a public edge (gateway, upload), in the order they apply: per address before
 * authenticating, failed authentications per address, then per principal. `req.ip` is the address (it
 * honours X-Forwarded-For only from the proxies TRUST_PROXY names), so a client cannot pick its bucket.
 */
export function createEdgeLimits(opts: EdgeLimitOptions) {
  const perAddress = limiterOf(opts.perAddress);
  const failures = limiterOf(opts.authFailuresPerAddress);
  const perPrincipal = limiterOf(opts.perPrincipal);
  const addressOf = (ip: string | undefined): string => ip ?? 'unknown';

  /** Spends `key` from the per-principal budget and sets the budget headers; throws 429 when over it. */
  const spendPrincipal = (key: string, res: Response): void => {
    if (!perPrincipal) return;
    const decision = perPrincipal.take(key);
    res.setHeader('X-RateLimit-Limit', String(perPrincipal.perMinute));
    res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
    if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds, SLOW_DOWN);
  };

  /** Before authentication: the address's own budget, and its budget of failed authentications. */
  const beforeAuth: RequestHandler = (req, _res, next) => {
    const address = addressOf(req.ip);
    if (perAddress) {
      const decision = perAddress.take(address);
      if (!decision.allowed) return next(rateLimited(decision.retryAfterSeconds, SLOW_DOWN));
    }
    if (failures) {
      const left = failures.has(address);
      if (!left.allowed) return next(rateLimited(left.retryAfterSeconds, 'Too many failed authentications from this address: retry after the given time'));
    }
    next();
  };

  /**
   * Wraps an authenticator: the address's limits first; a 401 from it spends one failed authentication; a
   * success spends the principal's budget under `principalKey(res)`.
   */
  const authenticated =
    (authenticate: RequestHandler, principalKey: (res: Response) => string): RequestHandler =>
    (req, res, next) => {
      beforeAuth(req, res, (limited?: unknown) => {
        if (limited) return next(limited);
        void authenticate(req, res, (err?: unknown) => {
          if (err) {
            if (failures && isAppError(err) && err.kind === 'UNAUTHENTICATED') failures.take(addressOf(req.ip));
            return next(err);
          }
          try {
            spendPrincipal(principalKey(res), res);
          } catch (e) {
            return next(e);
          }
          next();
        });
      });
    };

  return { beforeAuth, authenticated, spendPrincipal };
}

export type EdgeLimits = ReturnType<typeof createEdgeLimits>;

/** The limits of `edgeLimitEnv` (@dam/config) as createEdgeLimits takes them. */
export function edgeLimitsFromConfig(c: {
  RATE_LIMIT_PER_MINUTE: number;
  RATE_LIMIT_BURST: number;
  RATE_LIMIT_ADDRESS_PER_MINUTE: number;
  RATE_LIMIT_ADDRESS_BURST: number;
  AUTH_FAILURES_PER_MINUTE: number;
  AUTH_FAILURES_BURST: number;
}): Required<EdgeLimitOptions> {
  return {
    perPrincipal: { perMinute: c.RATE_LIMIT_PER_MINUTE, burst: c.RATE_LIMIT_BURST },
    perAddress: { perMinute: c.RATE_LIMIT_ADDRESS_PER_MINUTE, burst: c.RATE_LIMIT_ADDRESS_BURST },
    authFailuresPerAddress: { perMinute: c.AUTH_FAILURES_PER_MINUTE, burst: c.AUTH_FAILURES_BURST },
  };
}
