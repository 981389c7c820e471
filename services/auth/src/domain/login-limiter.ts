import { rateLimited } from '@dam/errors';

export interface LoginLimits {
  maxPerEmail: number;
  maxPerAddress: number;
  windowSeconds: number;
}

interface Bucket {
  failures: number;
  resetAt: number;
}

const SWEEP_AT = 10_000;

/**
 * Counts failed logins per email and per client address in fixed windows (in memory: one auth replica per
 * deployment today; a shared store is needed before scaling out). Once a key reaches its maximum, every
 * login for it answers 429 until the window ends, even with the right password.
 */
export class LoginLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly limits: LoginLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws rateLimited() when either the email or the address is locked out. */
  check(email: string, address: string): void {
    const waits = [this.wait(`e:${email}`, this.limits.maxPerEmail), this.wait(`a:${address}`, this.limits.maxPerAddress)];
    const longest = Math.max(...waits);
    if (longest > 0) throw rateLimited(longest / 1000, 'Too many failed login attempts; try again later');
  }

  recordFailure(email: string, address: string): void {
    this.bump(`e:${email}`);
    this.bump(`a:${address}`);
  }

  /** A successful login clears the email's count (not the address's: one address may try many emails). */
  recordSuccess(email: string): void {
    this.buckets.delete(`e:${email}`);
  }

  private wait(key: string, max: number): number {
    const b = this.buckets.get(key);
    const now = this.now();
    if (!b || b.resetAt <= now || b.failures < max) return 0;
    return b.resetAt - now;
  }

  private bump(key: string): void {
    const now = this.now();
    if (this.buckets.size >= SWEEP_AT) this.sweep(now);
    const b = this.buckets.get(key);
    if (!b || b.resetAt <= now) this.buckets.set(key, { failures: 1, resetAt: now + this.limits.windowSeconds * 1000 });
    else b.failures += 1;
  }

  private sweep(now: number): void {
    for (const [key, b] of this.buckets) if (b.resetAt <= now) this.buckets.delete(key);
  }
}
