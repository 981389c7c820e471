import { isIP } from 'node:net';
import { rateLimited } from '@dam/errors';

export interface LoginLimits {
  /** Failures of one email from all addresses together before its attempts are held (a distributed guess bound). */
  maxPerEmail: number;
  /** Failures from one address across all emails before its attempts are held (password spraying). */
  maxPerAddress: number;
  windowSeconds: number;
  /** Failures of one (email, address) pair before its next attempt must wait 1 s, then 2 s, 4 s... after each further one. */
  freeFailures?: number;
  /** The longest wait of a pair. */
  maxDelaySeconds?: number;
  /** How long an attempt past the per-address or per-email bound is held before its password is checked. */
  boundDelayMs?: number;
}

/** One admitted login attempt: it counts as a failure from the start, so a burst cannot outrun the bounds. */
export interface LoginAttempt {
  /** Past the per-address or per-email bound: how long to hold the attempt before checking its password (else 0). */
  readonly holdMs: number;
  /** The password was right: the attempt is no failure, and the pair's earlier failures are forgotten. */
  succeeded(): void;
  /** The password was wrong: the error to answer past a bound (429 with Retry-After), else undefined. */
  failed(): Error | undefined;
  /** No verdict on the password (an internal error): the attempt does not count. */
  abandoned(): void;
}

interface Count {
  failures: number;
  resetAt: number;
}

interface Pair {
  failures: number;
  /** No attempt of this pair before this time. */
  nextAt: number;
  /** Forgotten after a quiet window following `nextAt`. */
  resetAt: number;
}

const TOO_MANY = 'Too many failed login attempts; try again later';

const SWEEP_AT = 10_000;

/**
 * Slows password guessing without letting anyone lock an account out (in memory: one auth replica per
 * deployment today; a shared store is needed before scaling out).
 * - Per (email, client address): after a few failures, each attempt must wait a doubling delay. The right
 *   password from another address is unaffected: an attacker's failures delay only the attacker.
 * - Per address: a bound over all emails (spraying one password across many accounts).
 * - Per email: a much looser bound over all addresses, against a guess distributed over many addresses.
 * The last two are shared by strangers (everyone behind one NAT; every account an attacker names), so past them
 * an attempt is held a bounded delay and then checked: a right password still logs in, a wrong one answers 429.
 * Refusing them outright let anyone lock out every login of an address or an account (security review F1).
 * Holding before the check means a verdict past a bound costs the guesser the delay too.
 * An attempt counts as a failure from the moment it is admitted until its password checks out: checking the
 * password takes a while, and parallel requests would otherwise all pass before the first failure is known.
 */
export class LoginLimiter {
  private readonly counts = new Map<string, Count>();
  private readonly pairs = new Map<string, Pair>();
  private readonly free: number;
  private readonly maxDelayMs: number;
  private readonly boundDelayMs: number;

  constructor(
    private readonly limits: LoginLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.free = limits.freeFailures ?? 3;
    this.maxDelayMs = (limits.maxDelaySeconds ?? 900) * 1000;
    this.boundDelayMs = limits.boundDelayMs ?? 2000;
  }

  /**
   * Admits an attempt, or throws rateLimited() while the pair must wait (refused attempts count for nothing:
   * waiting is all an attacker can do). Past the address's or the email's bound the attempt is admitted but held.
   */
  begin(email: string, address: string): LoginAttempt {
    const now = this.now();
    const who = addressKey(address);
    const key = pairKey(email, who);
    const previous = this.pairs.get(key);
    const live = previous && previous.resetAt > now ? previous : undefined;
    if (live && live.nextAt > now) throw rateLimited((live.nextAt - now) / 1000, TOO_MANY);
    const overBoundMs = Math.max(
      this.overBound(`a:${who}`, this.limits.maxPerAddress, now),
      this.overBound(`e:${email}`, this.limits.maxPerEmail, now),
    );

    if (this.counts.size + this.pairs.size >= SWEEP_AT) this.sweep(now);
    const counted = [this.bump(`e:${email}`, now), this.bump(`a:${who}`, now)];
    const failures = (live?.failures ?? 0) + 1;
    const delay = failures >= this.free ? Math.min(this.maxDelayMs, 1000 * 2 ** Math.min(30, failures - this.free)) : 0;
    // Forgotten only after a quiet window once the delay is over: waiting out the longest delay earns no fresh free tries.
    const mine: Pair = { failures, nextAt: now + delay, resetAt: now + delay + this.limits.windowSeconds * 1000 };
    this.pairs.set(key, mine);

    let settled = false;
    const uncount = (): boolean => {
      if (settled) return false;
      settled = true;
      // A count that has rolled over into a new window since is another object: decrementing the old one is moot.
      for (const c of counted) c.failures = Math.max(0, c.failures - 1);
      return true;
    };
    return {
      holdMs: overBoundMs > 0 ? this.boundDelayMs : 0,
      // Not the address's count of other emails: one address may try many of them.
      succeeded: () => {
        if (uncount()) this.pairs.delete(key);
      },
      abandoned: () => {
        if (!uncount()) return;
        const current = this.pairs.get(key);
        if (current === mine) {
          if (live) this.pairs.set(key, live);
          else this.pairs.delete(key);
        } else if (current) {
          current.failures = Math.max(0, current.failures - 1);
        }
      },
      failed: () => {
        settled = true;
        return overBoundMs > 0 ? rateLimited(overBoundMs / 1000, TOO_MANY) : undefined;
      },
    };
  }

  private overBound(key: string, max: number, now: number): number {
    const c = this.counts.get(key);
    if (!c || c.resetAt <= now || c.failures < max) return 0;
    return c.resetAt - now;
  }

  private bump(key: string, now: number): Count {
    const c = this.counts.get(key);
    if (c && c.resetAt > now) {
      c.failures += 1;
      return c;
    }
    const fresh = { failures: 1, resetAt: now + this.limits.windowSeconds * 1000 };
    this.counts.set(key, fresh);
    return fresh;
  }

  private sweep(now: number): void {
    for (const [key, c] of this.counts) if (c.resetAt <= now) this.counts.delete(key);
    for (const [key, p] of this.pairs) if (p.resetAt <= now) this.pairs.delete(key);
  }
}

const pairKey = (email: string, address: string): string => `${email}\n${address}`;

/**
 * What one client is, for counting: an IPv4 address (IPv4-mapped IPv6 included), or the /64 of an IPv6 address,
 * since one subscriber usually holds a whole /64 and could otherwise rotate through it to reset every count.
 */
export function addressKey(address: string): string {
  const bare = address.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (bare.startsWith('::ffff:') && isIP(bare.slice(7)) === 4) return bare.slice(7);
  if (isIP(bare) !== 6) return bare;
  const [head = '', tail] = bare.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  // A dotted IPv4 tail fills two groups.
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const zeros = tail === undefined ? [] : Array<string>(8 - width(headGroups) - width(tailGroups)).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
