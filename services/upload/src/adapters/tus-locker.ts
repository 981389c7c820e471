import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Pool } from '@dam/db';
import type * as TusServer from '@tus/server' with { 'resolution-mode': 'import' };

/** What tus clients retry on (tus-js-client does): the upload is being written by another request. */
const LOCKED = { status_code: 423, body: 'Another request is writing this upload: retry shortly\n' };

export interface TusLockerOptions {
  /** Who holds the leases this locker takes (the tus_locks.holder column): by default host name, pid and a random part. */
  holder?: string;
  /** A holder that stopped renewing (its process died) loses the lease after this long. */
  ttlMs?: number;
  /** How long a request waits for an upload's lock before it answers an error. */
  acquireTimeoutMs?: number;
  /** How often a waiting request tries again. */
  pollMs?: number;
  /** A renewal or release that failed, or a lease found taken by another holder (its request is then cancelled). */
  onError?(error: unknown, id: string): void;
}

export interface TusLocker extends TusServer.Locker {
  /** Removes leases expired for longer than `graceMs` (of uploads nobody resumed after their holder died). */
  sweepExpired(graceMs: number): Promise<number>;
}

type Lock = TusServer.Lock;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The replica's name in tus_locks.holder: the pod's name in Kubernetes, and the process. */
export const replicaHolder = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/**
 * One lock per upload across every replica of the upload service: first within this process (a request of this
 * process holding it is asked to let go, as tus's own in-memory locker does), then a lease row of upload's table
 * tus_locks, taken by one request at a time (an INSERT that may take over only an expired row) and renewed every
 * third of `ttlMs` while held. A retried PATCH that reaches another replica waits until the request it retries has
 * released the upload (or died: its lease then expires after `ttlMs`), so two requests never write one upload at
 * once. Time is PostgreSQL's clock only, so the replicas' clocks do not matter. In upload's database, not NATS
 * (issue 35): a tus upload needs no bus. Each acquisition, renewal and release is one short query: no connection is
 * held while an upload is written.
 */
export function pgTusLocker(pool: Pick<Pool, 'query'>, opts: TusLockerOptions = {}): TusLocker {
  const holder = opts.holder ?? replicaHolder();
  const ttlMs = opts.ttlMs ?? 30_000;
  const acquireTimeoutMs = opts.acquireTimeoutMs ?? 30_000;
  const pollMs = opts.pollMs ?? 100;
  /** Uploads locked in this process, with how to ask their holder to let go. */
  const held = new Map<string, () => Promise<void> | void>();

  const take = async (id: string, token: string): Promise<boolean> => {
    const { rowCount } = await pool.query(
      `INSERT INTO tus_locks (id, holder, token, acquired_at, expires_at)
       VALUES ($1, $2, $3, now(), now() + $4::double precision * interval '1 millisecond')
       ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, token = EXCLUDED.token, acquired_at = EXCLUDED.acquired_at,
         expires_at = EXCLUDED.expires_at
       WHERE tus_locks.expires_at <= now()`,
      [id, holder, token, ttlMs],
    );
    return rowCount === 1;
  };

  class PgLock implements Lock {
    private token = '';
    private renew: NodeJS.Timeout | undefined;

    constructor(private readonly id: string) {}

    async lock(signal: AbortSignal, requestRelease: () => Promise<void> | void): Promise<void> {
      const deadline = Date.now() + acquireTimeoutMs;
      for (let asked: unknown; held.has(this.id);) {
        const release = held.get(this.id);
        if (release !== asked) {
          asked = release;
          await release?.();
        }
        if (signal.aborted || Date.now() > deadline) throw LOCKED;
        await sleep(10);
      }
      held.set(this.id, requestRelease);
      this.token = randomBytes(12).toString('hex');
      try {
        while (!(await take(this.id, this.token))) {
          if (signal.aborted || Date.now() > deadline) throw LOCKED;
          await sleep(pollMs);
        }
      } catch (error) {
        held.delete(this.id);
        throw error;
      }
      const { id, token } = this;
      this.renew = setInterval(
        () => {
          pool
            .query(`UPDATE tus_locks SET expires_at = now() + $3::double precision * interval '1 millisecond' WHERE id = $1 AND token = $2`, [id, token, ttlMs])
            .then(
              ({ rowCount }) => {
                if (rowCount === 1) return;
                // Expired (renewals failed for a whole TTL) and taken by another request: this one must stop writing.
                clearInterval(this.renew);
                opts.onError?.(new Error('the lease of this upload was taken by another holder: its request is cancelled'), id);
                void requestRelease();
              },
              (error: unknown) => opts.onError?.(error, id),
            );
        },
        Math.max(50, Math.floor(ttlMs / 3)),
      );
      this.renew.unref();
    }

    async unlock(): Promise<void> {
      clearInterval(this.renew);
      // Only this request's lease: one that expired and was taken by another request stays.
      await pool.query('DELETE FROM tus_locks WHERE id = $1 AND token = $2', [this.id, this.token]).catch((error: unknown) => opts.onError?.(error, this.id));
      held.delete(this.id);
    }
  }

  return {
    newLock: (id: string) => new PgLock(id),
    async sweepExpired(graceMs) {
      const { rowCount } = await pool.query(`DELETE FROM tus_locks WHERE expires_at <= now() - $1::double precision * interval '1 millisecond'`, [graceMs]);
      return rowCount ?? 0;
    },
  };
}
