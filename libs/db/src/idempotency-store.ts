import type { Pool } from 'pg';
import type { Claim, IdempotencyStore, KeptResponse } from '@dam/http';
import type { Migration } from './index';

/**
 * The table of CONTRACT §13's kept responses, in the database of each service that keeps them (the gateway, upload):
 * include it in that service's migrations. `key` is the middleware's hash of the group, the user (or API key) and the
 * Idempotency-Key (libs/http idempotency.ts), so a key is per group and user and the client's key itself is not
 * stored. `claim` is the token of the request that holds the key (a sequence: a later claim has a larger one);
 * `response` is null while that request runs.
 */
export const IDEMPOTENCY_MIGRATION: Migration = {
  name: '001_idempotency_keys.sql',
  sql: `
CREATE SEQUENCE IF NOT EXISTS idempotency_claims;
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key text PRIMARY KEY,
  claim bigint NOT NULL,
  response jsonb,
  claimed_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
`,
};

const DAY_MS = 24 * 60 * 60 * 1000;
/** Rows removed per statement by `sweep` (short statements: a large backlog is removed over several). */
const SWEEP_BATCH = 1000;

export interface PgIdempotencyStoreOptions {
  /** How long a kept response is answered again (CONTRACT §13: a day), counted from when it was kept. */
  ttlMs?: number;
  /** A request running longer than this is taken to have died with its process: its key may be claimed again. */
  runningTtlMs?: number;
}

type Queryable = Pick<Pool, 'query'>;

/**
 * CONTRACT §13's responses in PostgreSQL, shared by every replica of a service: a claim is one `INSERT … ON CONFLICT
 * DO UPDATE … WHERE` (exactly one of several concurrent requests gets the key; a key whose kept response expired, or
 * whose request stalled past `runningTtlMs`, is taken over in the same statement), a kept response or a release is
 * conditional on the claim's token, so a request whose key was taken over after it stalled cannot overwrite its
 * successor. Expired rows answer as absent; `sweep` removes them. The database being unreachable fails the call
 * (the middleware answers 503 IDEMPOTENCY_UNAVAILABLE before anything ran).
 */
export interface PgIdempotencyStore extends IdempotencyStore {
  /** Removes expired keys (claim treats them as absent already); answers how many. */
  sweep(): Promise<number>;
}

export function pgIdempotencyStore(pool: Queryable, opts: PgIdempotencyStoreOptions = {}): PgIdempotencyStore {
  const ttlMs = opts.ttlMs ?? DAY_MS;
  const runningTtlMs = opts.runningTtlMs ?? 2 * 60 * 60 * 1000;
  return {
    async claim(key: string): Promise<Claim> {
      for (let attempt = 0; attempt < 5; attempt++) {
        const taken = await pool.query<{ claim: string }>(
          `INSERT INTO idempotency_keys AS k (key, claim, claimed_at, expires_at)
           VALUES ($1, nextval('idempotency_claims'), now(), now() + $2::double precision * interval '1 millisecond')
           ON CONFLICT (key) DO UPDATE
             SET claim = EXCLUDED.claim, response = NULL, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
             WHERE k.expires_at <= now()
                OR (k.response IS NULL AND k.claimed_at <= now() - $3::double precision * interval '1 millisecond')
           RETURNING claim`,
          [key, ttlMs, runningTtlMs],
        );
        const claimed = taken.rows[0];
        if (claimed) return { kind: 'claimed', token: Number(claimed.claim) };
        const held = await pool.query<{ response: KeptResponse | null }>('SELECT response FROM idempotency_keys WHERE key = $1 AND expires_at > now()', [key]);
        const row = held.rows[0];
        // Released or expired between the two statements: claim again.
        if (!row) continue;
        return row.response ? { kind: 'done', response: row.response } : { kind: 'running' };
      }
      throw new Error('the Idempotency-Key kept changing hands: try again');
    },
    async keep(key: string, token: number, response: KeptResponse): Promise<void> {
      const kept = await pool.query(
        `UPDATE idempotency_keys SET response = $3, expires_at = now() + $4::double precision * interval '1 millisecond'
         WHERE key = $1 AND claim = $2 AND response IS NULL`,
        [key, token, response, ttlMs],
      );
      if (kept.rowCount !== 1) throw new Error('the Idempotency-Key was taken over by a later request: this answer is not kept');
    },
    async release(key: string, token: number): Promise<void> {
      await pool.query('DELETE FROM idempotency_keys WHERE key = $1 AND claim = $2 AND response IS NULL', [key, token]);
    },
    async sweep(): Promise<number> {
      let removed = 0;
      for (;;) {
        const gone = await pool.query(
          'DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)',
          [SWEEP_BATCH],
        );
        removed += gone.rowCount ?? 0;
        if ((gone.rowCount ?? 0) < SWEEP_BATCH) return removed;
      }
    },
  };
}
