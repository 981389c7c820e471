import { randomUUID } from 'node:crypto';
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
  succeeded(): Promise<void>;
  /** The password was wrong: the error to answer past a bound (429 with Retry-After), else undefined. */
  failed(): Error | undefined;
  /** No verdict on the password (an internal error): the attempt does not count. */
  abandoned(): Promise<void>;
}

/** What the store is asked: one attempt of (email, address), under the limiter's policy. */
export interface AttemptToCount {
  email: string;
  /** addressKey() of the client's address. */
  address: string;
  /** Names this attempt, so that settling it undoes this attempt's count and no other's. */
  attempt: string;
  now: number;
  windowMs: number;
  freeFailures: number;
  maxDelayMs: number;
  maxPerEmail: number;
  maxPerAddress: number;
}

export interface CountedAttempt {
  /** > 0: the pair must wait this long; the attempt was refused and counted nowhere. */
  waitMs: number;
  /** How long the address's or the email's window still runs if it was already past its bound (else 0). */
  overBoundMs: number;
  /** The windows the attempt was counted in (their reset times), for settling. */
  emailWindow: number;
  addressWindow: number;
}

/**
 * Where the limiter keeps its counts: one store every auth replica shares (PostgreSQL, login-attempt.repository.ts),
 * so that two replicas neither double the bounds nor split the delays (issue 31, D9). Each call is atomic.
 */
export interface LoginAttemptStore {
  /** Refuses the attempt while its pair must wait; else counts it as a failure of the pair, the email and the address. */
  begin(a: AttemptToCount): Promise<CountedAttempt>;
  /** The attempt is no failure after all: `succeeded` forgets the pair, else the pair is put back as it was. */
  settle(a: Pick<AttemptToCount, 'email' | 'address' | 'attempt'> & Pick<CountedAttempt, 'emailWindow' | 'addressWindow'>, succeeded: boolean): Promise<void>;
}

const TOO_MANY = 'Too many failed login attempts; try again later';

/**
 * Slows password guessing without letting anyone lock an account out. Its counts live in a store all auth
 * replicas share.
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
 * A wrong password costs one round trip to the store, a right one two.
 */
export class LoginLimiter {
  private readonly free: number;
  private readonly maxDelayMs: number;
  private readonly boundDelayMs: number;

  constructor(
    private readonly store: LoginAttemptStore,
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
  async begin(email: string, address: string): Promise<LoginAttempt> {
    const pair = { email, address: addressKey(address), attempt: randomUUID() };
    const counted = await this.store.begin({
      ...pair,
      now: this.now(),
      windowMs: this.limits.windowSeconds * 1000,
      freeFailures: this.free,
      maxDelayMs: this.maxDelayMs,
      maxPerEmail: this.limits.maxPerEmail,
      maxPerAddress: this.limits.maxPerAddress,
    });
    if (counted.waitMs > 0) throw rateLimited(counted.waitMs / 1000, TOO_MANY);
    const { overBoundMs } = counted;
    let settled = false;
    const settle = async (succeeded: boolean): Promise<void> => {
      if (settled) return;
      settled = true;
      await this.store.settle({ ...pair, emailWindow: counted.emailWindow, addressWindow: counted.addressWindow }, succeeded);
    };
    return {
      holdMs: overBoundMs > 0 ? this.boundDelayMs : 0,
      // The pair is forgotten; not the address's count of other emails: one address may try many of them.
      succeeded: () => settle(true),
      abandoned: () => settle(false),
      failed: () => {
        settled = true;
        return overBoundMs > 0 ? rateLimited(overBoundMs / 1000, TOO_MANY) : undefined;
      },
    };
  }
}

/**
 * What one client is, for counting: an IPv4 address (IPv4-mapped IPv6 included), or the /64 of an IPv6 address,
 * since one subscriber usually holds a whole /64 and could otherwise rotate through it to reset every count.
 */
export function addressKey(address: string): string {
  const bare = address
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '');
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
