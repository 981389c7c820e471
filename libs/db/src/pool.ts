import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { isDependencyUnavailable } from '@dam/errors';
import { checkRootCert, describingClient, tlsSettingsOf } from './tls';

/** A service's database settings as its config parses them (`dbEnv` of @dam/config). */
export interface DbSettings {
  DATABASE_URL: string;
  /** Connections this process opens at most (pg's Pool `max`). */
  DB_POOL_MAX: number;
}

/**
 * A pool on DATABASE_URL: a service passes its config (the URL and DB_POOL_MAX), tests and tools may pass a URL (10
 * connections). TLS is set in the URL (see tls.ts); a CA file it names that cannot be read throws here.
 */
export function createPool(db: string | DbSettings, opts: Omit<PoolConfig, 'connectionString'> = {}): Pool {
  const connectionString = typeof db === 'string' ? db : db.DATABASE_URL;
  const tls = tlsSettingsOf(connectionString);
  checkRootCert(tls);
  const pool = new Pool({
    connectionString,
    max: typeof db === 'string' ? 10 : db.DB_POOL_MAX,
    // Every connection's TLS failure names TLS, the host and the CA (a start that fails says why).
    Client: describingClient(tls) as NonNullable<PoolConfig['Client']>,
    idleTimeoutMillis: 30000,
    // A server that is down, hung or unreachable must not hold requests for ever (node-postgres waits without a
    // bound by default): a connection is waited for 5 s (also when all `max` are busy), a query's answer 30 s; both
    // end as errors the HTTP layer answers 503, and a timed-out connection is dropped, not reused.
    connectionTimeoutMillis: 5000,
    query_timeout: 30_000,
    keepAlive: true,
    ...opts,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor a checked-out one: between two queries (a transaction awaiting something else, the outbox relay awaiting
  // NATS acks) a client has no error listener of the pool's, and the server ending its connection (a restart, a fast
  // shutdown) emitted an 'error' nobody listened to, which ended the process. With this listener its next query fails
  // instead, and the pool drops it when it is released (it is no longer queryable).
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A connection that timed out or broke may still owe an answer: it is destroyed, not handed out again.
    if (isDependencyUnavailable(err)) broken = err instanceof Error ? err : new Error(String(err));
    else await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release(broken);
  }
}

/** For /readyz: a round trip, bounded (a hung server answers nothing and the probe must not hang with it). */
export async function ping(pool: Pool, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const answered = pool.query('SELECT 1').then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([answered, late]);
  } finally {
    clearTimeout(timer);
  }
}
