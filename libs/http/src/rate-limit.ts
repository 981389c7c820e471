import { lookup } from 'node:dns/promises';
import type { RequestHandler, Response } from 'express';
import { isAppError, rateLimited } from '@dam/errors';

/**
 * How many replicas of an edge share its budgets (issue 31). A budget is the deployment's total: the load balancer
 * spreads a client's requests over the replicas, so each replica admits its share, 1/n of the rate and the burst,
 * in its own memory (a network round trip per request would cost more than the limit saves).
 */
export type ReplicaCount = () => number;

export interface RateLimitDecision {
  allowed: boolean;
  /** Whole tokens left after this request, deployment-wide: this replica's share times the replicas. */
  remaining: number;
  /** Seconds until one token is back (only meaningful when refused). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** This replica's share of a budget: 1/n of its rate (tokens a millisecond) and of its burst (at least one request). */
interface Share {
  n: number;
  perMs: number;
  burst: number;
}

/**
 * Token buckets per caller: `burst` requests at once, refilled at `perMinute`, both the deployment's totals of
 * which this replica keeps its share (`replicas`, ReplicaCount) in memory.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly perMinute: number,
    readonly burst: number,
    /** Above this many callers, buckets that are full again are dropped (they carry no information). */
    private readonly maxKeys = 100_000,
    /** Replicas of the edge sharing the budget (1: this one alone); asked on every request, so it may change. */
    private readonly replicas: ReplicaCount = () => 1,
  ) {}

  take(key: string, nowMs: number = Date.now()): RateLimitDecision {
    const share = this.share();
    const bucket = this.refill(this.buckets.get(key) ?? { tokens: share.burst, updatedMs: nowMs }, nowMs, share);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    // At most one sweep a second: with many live callers a sweep per request would cost O(callers) each time.
    if (this.buckets.size > this.maxKeys && nowMs - this.lastSweepMs >= 1000) this.sweep(nowMs, share);
    return {
      allowed,
      remaining: Math.floor(bucket.tokens * share.n),
      retryAfterSeconds: allowed ? 0 : Math.ceil((1 - bucket.tokens) / share.perMs / 1000),
    };
  }

  /** Whether `key` has a whole token now, without spending it. */
  has(key: string, nowMs: number = Date.now()): { allowed: boolean; retryAfterSeconds: number } {
    const bucket = this.buckets.get(key);
    if (!bucket) return { allowed: true, retryAfterSeconds: 0 };
    const share = this.share();
    const { tokens } = this.refill(bucket, nowMs, share);
    return { allowed: tokens >= 1, retryAfterSeconds: tokens >= 1 ? 0 : Math.ceil((1 - tokens) / share.perMs / 1000) };
  }

  private share(): Share {
    const replicas = this.replicas();
    const n = Number.isFinite(replicas) && replicas > 1 ? Math.floor(replicas) : 1;
    return { n, perMs: this.perMinute / n / 60_000, burst: Math.max(1, this.burst / n) };
  }

  private refill(bucket: Bucket, nowMs: number, share: Share): Bucket {
    const elapsed = Math.max(0, nowMs - bucket.updatedMs);
    return { tokens: Math.min(share.burst, bucket.tokens + elapsed * share.perMs), updatedMs: nowMs };
  }

  private sweep(nowMs: number, share: Share): void {
    this.lastSweepMs = nowMs;
    for (const [key, bucket] of this.buckets) {
      if (this.refill(bucket, nowMs, share).tokens >= share.burst) this.buckets.delete(key);
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
  /**
   * Over how many replicas the budgets above are spread (1 by default): they are the deployment's totals, each
   * replica admits its share (RATE_LIMIT_REPLICAS, RATE_LIMIT_PEERS).
   */
  replicas?: ReplicaCount;
}

const limiterOf = (b: Budget | undefined, replicas?: ReplicaCount): RateLimiter | undefined =>
  b && b.perMinute > 0 ? new RateLimiter(b.perMinute, b.burst, undefined, replicas) : undefined;

const SLOW_DOWN = 'Too many requests: slow down and retry after the given time';

/**
 * The request limits of a public edge (gateway, upload), in the order they apply: per address before
 * authenticating, failed authentications per address, then per principal. `req.ip` is the address (it
 * honours X-Forwarded-For only from the proxies TRUST_PROXY names), so a client cannot pick its bucket.
 */
export function createEdgeLimits(opts: EdgeLimitOptions) {
  const perAddress = limiterOf(opts.perAddress, opts.replicas);
  const failures = limiterOf(opts.authFailuresPerAddress, opts.replicas);
  const perPrincipal = limiterOf(opts.perPrincipal, opts.replicas);
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

export interface PeerCountOptions {
  /** A name whose addresses are the edge's ready replicas: a headless Service selecting its pods. */
  name: string;
  /** The count until the first lookup answers (RATE_LIMIT_REPLICAS). */
  fallback: number;
  /** A lookup at most this often (default 15 s), in the background: a request never waits for one. */
  refreshMs?: number;
  /** How many addresses the name has (default: the system resolver, search domains included). */
  count?: (name: string) => Promise<number>;
  now?: () => number;
  /** A lookup failed: the last count holds meanwhile. */
  onError?: (err: unknown) => void;
}

const countAddresses = async (name: string): Promise<number> => new Set((await lookup(name, { all: true })).map((a) => a.address)).size;

/**
 * The replicas of an edge as DNS sees them: the addresses of a headless Service, which lists the ready pods only,
 * so the share follows the autoscaler within about `refreshMs` plus the DNS cache's TTL. Never below 1; a failed
 * or empty lookup keeps the last count.
 */
export function dnsReplicaCount(opts: PeerCountOptions): ReplicaCount {
  const refreshMs = opts.refreshMs ?? 15_000;
  const now = opts.now ?? Date.now;
  const count = opts.count ?? countAddresses;
  let current = Math.max(1, opts.fallback);
  let lastLookupMs = Number.NEGATIVE_INFINITY;
  let inFlight = false;
  return () => {
    const t = now();
    if (!inFlight && t - lastLookupMs >= refreshMs) {
      inFlight = true;
      lastLookupMs = t;
      count(opts.name)
        .then((n) => {
          if (n >= 1) current = n;
        })
        .catch((err: unknown) => opts.onError?.(err))
        .finally(() => (inFlight = false));
    }
    return current;
  };
}

/** The limits of `edgeLimitEnv` (@dam/config) as createEdgeLimits takes them. */
export function edgeLimitsFromConfig(
  c: {
    RATE_LIMIT_PER_MINUTE: number;
    RATE_LIMIT_BURST: number;
    RATE_LIMIT_ADDRESS_PER_MINUTE: number;
    RATE_LIMIT_ADDRESS_BURST: number;
    AUTH_FAILURES_PER_MINUTE: number;
    AUTH_FAILURES_BURST: number;
    RATE_LIMIT_REPLICAS?: number;
    RATE_LIMIT_PEERS?: string;
  },
  peers: Partial<Pick<PeerCountOptions, 'count' | 'now' | 'onError' | 'refreshMs'>> = {},
): Required<EdgeLimitOptions> {
  return {
    perPrincipal: { perMinute: c.RATE_LIMIT_PER_MINUTE, burst: c.RATE_LIMIT_BURST },
    perAddress: { perMinute: c.RATE_LIMIT_ADDRESS_PER_MINUTE, burst: c.RATE_LIMIT_ADDRESS_BURST },
    authFailuresPerAddress: { perMinute: c.AUTH_FAILURES_PER_MINUTE, burst: c.AUTH_FAILURES_BURST },
    replicas: replicaCountFromConfig(c, peers),
  };
}

/** The replica count of `edgeReplicaEnv` (@dam/config): RATE_LIMIT_PEERS looked up, or RATE_LIMIT_REPLICAS fixed. */
export function replicaCountFromConfig(
  c: { RATE_LIMIT_REPLICAS?: number; RATE_LIMIT_PEERS?: string },
  peers: Partial<Pick<PeerCountOptions, 'count' | 'now' | 'onError' | 'refreshMs'>> = {},
): ReplicaCount {
  const fallback = c.RATE_LIMIT_REPLICAS ?? 1;
  return c.RATE_LIMIT_PEERS ? dnsReplicaCount({ ...peers, name: c.RATE_LIMIT_PEERS, fallback }) : () => fallback;
}
