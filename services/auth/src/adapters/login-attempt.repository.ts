import type { AttemptToCount, CountedAttempt, LoginAttemptStore } from '../domain/login-limiter';
import type { Db } from './db';

/**
 * `login_pairs` and `login_failure_windows`: the login limiter's counts, shared by every auth replica. Each call is
 * one round trip to a function of migration 005, which takes its rows in one order under row locks.
 */
export class LoginAttemptRepository implements LoginAttemptStore {
  constructor(private readonly db: Db) {}

  async begin(a: AttemptToCount): Promise<CountedAttempt> {
    const { rows } = await this.db.query<{ wait_ms: string; over_bound_ms: string; email_window: string | null; address_window: string | null }>(
      'SELECT wait_ms, over_bound_ms, email_window, address_window FROM login_attempt_begin($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [a.email, a.address, a.attempt, a.now, a.windowMs, a.freeFailures, a.maxDelayMs, a.maxPerEmail, a.maxPerAddress],
    );
    const r = rows[0];
    if (!r) throw new Error('login_attempt_begin returned no row');
    return {
      waitMs: Number(r.wait_ms),
      overBoundMs: Number(r.over_bound_ms),
      // No window when refused: nothing was counted.
      emailWindow: Number(r.email_window ?? 0),
      addressWindow: Number(r.address_window ?? 0),
    };
  }

  async settle(
    a: Pick<AttemptToCount, 'email' | 'address' | 'attempt'> & Pick<CountedAttempt, 'emailWindow' | 'addressWindow'>,
    succeeded: boolean,
  ): Promise<void> {
    await this.db.query('SELECT login_attempt_settle($1, $2, $3, $4, $5, $6)', [a.email, a.address, a.attempt, a.emailWindow, a.addressWindow, succeeded]);
  }

  /** Forgets what has expired by `now` (every replica may run it: deleting twice is harmless). */
  async prune(now: number): Promise<number> {
    const pairs = await this.db.query('DELETE FROM login_pairs WHERE reset_at <= $1', [now]);
    const windows = await this.db.query('DELETE FROM login_failure_windows WHERE reset_at <= $1', [now]);
    return (pairs.rowCount ?? 0) + (windows.rowCount ?? 0);
  }
}
