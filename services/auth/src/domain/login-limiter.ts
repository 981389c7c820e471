import { rateLimited } from '@dam/errors';

export interface LoginLimits {
  /** Failures of one email from all addresses together before it is refused (loose: a distributed guess bound). */
  maxPerEmail: number;
  /** Failures from one address across all emails before it is refused (password spraying). */
  maxPerAddress: number;
  windowSeconds: number;
  /** Failures of one (email, address) pair before its next attempt must wait 1 s, then 2 s, 4 s... after each further one. */
  freeFailures?: number;
  /** The longest wait of a pair. */
  maxDelaySeconds?: number;
}

interface Count {
  failures: number;
  resetAt: number;
}

interface Pair {
  failures: number;
  /** No attempt of this pair before this time. */
  nextAt: number;
  /** Forgotten after a quiet window. */
  resetAt: number;
}

const SWEEP_AT = 10_000;

/**
 * Slows password guessing without letting anyone lock an account out (in memory: one auth replica per
 * deployment today; a shared store is needed before scaling out).
 * - Per (email, client address): after a few failures, each attempt must wait a doubling delay. The right
 *   password from another address is unaffected: an attacker's failures delay only the attacker.
 * - Per address: a bound over all emails (spraying one password across many accounts).
 * - Per email: a much looser bound over all addresses, against a guess distributed over many addresses.
 */
export class LoginLimiter {
  private readonly counts = new Map<string, Count>();
  private readonly pairs = new Map<string, Pair>();
  private readonly free: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly limits: LoginLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.free = limits.freeFailures ?? 3;
    this.maxDelayMs = (limits.maxDelaySeconds ?? 900) * 1000;
  }

  /** Throws rateLimited() while the pair must wait, or the address or email is over its bound. */
  check(email: string, address: string): void {
    const now = this.now();
    const pair = this.pairs.get(pairKey(email, address));
    const waits = [
      pair && pair.resetAt > now ? Math.max(0, pair.nextAt - now) : 0,
      this.overBound(`a:${address}`, this.limits.maxPerAddress, now),
      this.overBound(`e:${email}`, this.limits.maxPerEmail, now),
    ];
    const longest = Math.max(...waits);
    if (longest > 0) throw rateLimited(longest / 1000, 'Too many failed login attempts; try again later');
  }

  recordFailure(email: string, address: string): void {
    const now = this.now();
    if (this.counts.size + this.pairs.size >= SWEEP_AT) this.sweep(now);
    this.bump(`e:${email}`, now);
    this.bump(`a:${address}`, now);
    const key = pairKey(email, address);
    const old = this.pairs.get(key);
    const failures = old && old.resetAt > now ? old.failures + 1 : 1;
    const delay = failures >= this.free ? Math.min(this.maxDelayMs, 1000 * 2 ** Math.min(30, failures - this.free)) : 0;
    this.pairs.set(key, { failures, nextAt: now + delay, resetAt: now + Math.max(delay, this.limits.windowSeconds * 1000) });
  }

  /** A successful login clears the pair (not the address's count: one address may try many emails). */
  recordSuccess(email: string, address: string): void {
    this.pairs.delete(pairKey(email, address));
  }

  private overBound(key: string, max: number, now: number): number {
    const c = this.counts.get(key);
    if (!c || c.resetAt <= now || c.failures < max) return 0;
    return c.resetAt - now;
  }

  private bump(key: string, now: number): void {
    const c = this.counts.get(key);
    if (!c || c.resetAt <= now) this.counts.set(key, { failures: 1, resetAt: now + this.limits.windowSeconds * 1000 });
    else c.failures += 1;
  }

  private sweep(now: number): void {
    for (const [key, c] of this.counts) if (c.resetAt <= now) this.counts.delete(key);
    for (const [key, p] of this.pairs) if (p.resetAt <= now) this.pairs.delete(key);
  }
}

const pairKey = (email: string, address: string): string => `${email}\n${address}`;
