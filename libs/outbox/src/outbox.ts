import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { currentTraceHeaders } from '@dam/telemetry';
import type { Pool, PoolClient } from 'pg';
import type { z } from 'zod';
import { buildHeaders, connectionWatch, errorFields, InvalidEventPayloadError, parsePayload, schemaForSubject, type EventLogger } from '@dam/events';
import { outboxMetrics } from './outbox.metrics';

/** Include in the owning service's migrations (the table lives in that service's database). */
export const OUTBOX_MIGRATION_SQL = `
CREATE TABLE IF NOT EXISTS outbox (
  seq bigserial PRIMARY KEY,
  id text UNIQUE NOT NULL,
  subject text NOT NULL,
  payload jsonb NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON outbox (seq) WHERE published_at IS NULL;
`;

/** One drainer per database at a time keeps events in commit order; any constant works, this one is "outbox". */
export const OUTBOX_LOCK_KEY = 0x6f7574626f78;

type Queryable = Pick<PoolClient, 'query'>;

export interface OutboxEntry {
  /** Event id: becomes the `Nats-Msg-Id`, so re-publishing the row is harmless. */
  id: string;
  subject: string;
  payload: unknown;
  /** Defaults to the registered schema of the subject; a subject without one needs it here. */
  schema?: z.ZodType;
  headers?: Record<string, string>;
}

/**
 * Records an event in the caller's transaction (pass the transaction's client): it is published only if
 * that transaction commits. Validates now, so a bad event fails the write instead of the relay.
 */
export async function writeOutbox(client: Queryable, entry: OutboxEntry): Promise<void> {
  const schema = entry.schema ?? schemaForSubject(entry.subject);
  if (!schema) {
    throw new InvalidEventPayloadError(entry.subject, [{ path: '', message: 'no schema is registered for this subject' }]);
  }
  const payload = parsePayload(entry.subject, schema, entry.payload);
  const headers = { ...currentTraceHeaders(), ...entry.headers };
  // The notification wakes the relays when the transaction commits (several of one transaction arrive as one); it
  // goes with the row, one round trip.
  await client.query(`INSERT INTO outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4) RETURNING pg_notify('${OUTBOX_CHANNEL}', '')`, [
    entry.id,
    entry.subject,
    JSON.stringify(payload),
    JSON.stringify(headers),
  ]);
}

/** The channel relays LISTEN on: a commit with outbox rows wakes them instead of waiting for the next poll. */
export const OUTBOX_CHANNEL = 'dam_outbox';

export interface OutboxRelayOptions {
  pool: Pool;
  nc: NatsConnection;
  logger: EventLogger;
  /** Pause between polls when the outbox is empty. */
  intervalMs?: number;
  batchSize?: number;
  lockKey?: number;
  /** Published rows older than this are deleted (default 7 days): the stream, not the outbox, is the history. */
  retentionMs?: number;
}

export interface OutboxRelay {
  /** Publishes one batch; returns how many rows it published (0 when another relay holds the lock). */
  drainOnce(): Promise<number>;
  /** Deletes published rows past the retention; returns how many. Runs by itself about once a minute. */
  pruneOnce(): Promise<number>;
  stop(): Promise<void>;
}

interface OutboxRow {
  seq: string;
  id: string;
  subject: string;
  payload: unknown;
  headers: Record<string, string>;
}

/**
 * Drains the outbox to JetStream in `seq` order. Publishing happens inside the row-locking transaction, so a
 * crash between the publish and the commit re-publishes the row later; JetStream drops it by msgID (within
 * the duplicate window), which makes two relays or a restart safe.
 */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { pool, logger } = options;
  const js: JetStreamClient = jetstream(options.nc);
  const connection = connectionWatch(options.nc);
  const batchSize = options.batchSize ?? 100;
  const intervalMs = options.intervalMs ?? 200;
  const lockKey = options.lockKey ?? OUTBOX_LOCK_KEY;
  const retentionSeconds = (options.retentionMs ?? 7 * 24 * 3600 * 1000) / 1000;
  const metrics = outboxMetrics();
  if (!Number.isSafeInteger(lockKey) || !Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError('lockKey and batchSize must be integers');
  // Sent as a simple query (no parameters) after BEGIN, in the same round trip; both numbers are checked above.
  const claimBatch = `SELECT seq, id, subject, payload, headers FROM outbox
    WHERE (SELECT pg_try_advisory_xact_lock(${lockKey})) AND published_at IS NULL ORDER BY seq LIMIT ${batchSize} FOR UPDATE`;

  /**
   * The lag gauges, read from the table itself so every relay (lock holder or not) reports the truth; returns how
   * many rows wait (undefined when the query failed).
   */
  const measure = async (): Promise<number | undefined> => {
    try {
      const { rows } = await pool.query<{ n: number; age: number | null }>(
        `SELECT count(*)::int AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age
           FROM outbox WHERE published_at IS NULL`,
      );
      const n = rows[0]?.n ?? 0;
      metrics.unpublished.set(n);
      metrics.oldestAge.set(Math.max(0, rows[0]?.age ?? 0));
      return n;
    } catch (error) {
      logger.warn({ ...errorFields(error) }, 'outbox lag query failed');
      return undefined;
    }
  };

  const drainOnce = async (): Promise<number> => {
    const published = await drainBatch();
    await measure();
    return published;
  };

  const drainBatch = async (): Promise<number> => {
    // While NATS is down a publish is buffered, discarded at the reconnection and timed out after 5 s: the rows
    // wait instead, and the first poll after the reconnection publishes them.
    if (!connection.connected()) return 0;
    const client = await pool.connect();
    try {
      // One round trip: the transaction, the drainers' lock (its one-time filter runs first: without the lock no row
      // is read or locked) and the batch. A relay that did not get the lock sees no rows, as with an empty outbox.
      const [, batch] = (await client.query(`BEGIN; ${claimBatch}`)) as unknown as [unknown, { rows: OutboxRow[] }];
      const rows = batch.rows;
      const published: string[] = [];
      for (const row of rows) {
        try {
          // Fails at once when the connection goes while the ack is awaited (the row is published again later).
          await connection.untilDisconnected(
            js.publish(row.subject, JSON.stringify(row.payload), {
              msgID: row.id,
              headers: buildHeaders(row.headers),
            }),
          );
          published.push(row.seq);
        } catch (error) {
          metrics.failures.inc();
          // Stop at the first failure: publishing a later row first would reorder events.
          logger.warn({ outbox_id: row.id, subject: row.subject, ...errorFields(error) }, 'outbox publish failed');
          break;
        }
      }
      // The mark and the commit in one round trip (the sequence numbers are PostgreSQL's own bigints).
      await client.query(
        published.length > 0
          ? `UPDATE outbox SET published_at = now() WHERE seq = ANY('{${published.map((seq) => BigInt(seq).toString()).join(',')}}'::bigint[]); COMMIT`
          : 'COMMIT',
      );
      metrics.published.inc(published.length);
      return published.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };

  const pruneOnce = async (): Promise<number> => {
    // Bounded batches keep the delete short; unpublished rows are never touched.
    const result = await pool.query(
      `DELETE FROM outbox WHERE seq IN (
         SELECT seq FROM outbox WHERE published_at < now() - make_interval(secs => $1) ORDER BY seq LIMIT 1000)`,
      [retentionSeconds],
    );
    return result.rowCount ?? 0;
  };

  let stopping = false;
  let lastPruneMs = 0;
  let timer: NodeJS.Timeout | undefined;
  let cycle: Promise<void> | undefined;
  let running = false;
  /** A notification arrived while a cycle ran: run again at once when it ends. */
  let woken = false;
  let listener: PoolClient | undefined;

  /**
   * A poll measures first and drains only when rows wait: an idle relay costs one query per poll, not five. A wake
   * (a commit wrote rows) drains at once and leaves the gauges to the next poll, off the path of what it publishes.
   */
  const runCycle = async (kind: 'poll' | 'wake'): Promise<void> => {
    try {
      const waiting = kind === 'poll' ? await measure() : undefined;
      // A full batch means more may be waiting: keep going without the pause.
      if (waiting !== 0) while (!stopping && (await drainBatch()) === batchSize);
      if (Date.now() - lastPruneMs > 60_000) {
        lastPruneMs = Date.now();
        await pruneOnce();
      }
    } catch (error) {
      logger.warn({ ...errorFields(error) }, 'outbox drain failed: retrying');
    }
  };
  const start = (kind: 'poll' | 'wake') => {
    running = true;
    cycle = runCycle(kind).finally(() => {
      running = false;
      if (woken && !stopping) {
        woken = false;
        start('wake');
      } else schedule();
    });
  };
  const schedule = () => {
    if (stopping) return;
    timer = setTimeout(() => {
      timer = undefined;
      start('poll');
    }, intervalMs);
  };
  /** A commit wrote outbox rows: drain now rather than at the next poll (the poll stays, as a safety net). */
  const wake = () => {
    if (stopping) return;
    if (running) {
      woken = true;
      return;
    }
    if (timer) clearTimeout(timer);
    timer = undefined;
    start('wake');
  };
  const listen = async (): Promise<void> => {
    if (stopping) return;
    try {
      const client = await pool.connect();
      client.on('notification', wake);
      client.on('error', (error) => {
        // The connection is gone: polling carries on, and listening is tried again shortly.
        logger.warn({ ...errorFields(error) }, 'outbox listener lost: polling until it is back');
        client.removeListener('notification', wake);
        client.release(true);
        if (listener === client) listener = undefined;
        setTimeout(() => void listen(), 1000).unref();
      });
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      listener = client;
      if (stopping) await releaseListener();
    } catch (error) {
      logger.warn({ ...errorFields(error) }, 'outbox listener could not start: polling only');
      setTimeout(() => void listen(), 1000).unref();
    }
  };
  const releaseListener = async (): Promise<void> => {
    const client = listener;
    listener = undefined;
    if (!client) return;
    client.removeListener('notification', wake);
    await client.query(`UNLISTEN ${OUTBOX_CHANNEL}`).catch(() => undefined);
    client.release();
  };
  schedule();
  void listen();

  return {
    drainOnce,
    pruneOnce,
    async stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      await cycle;
      await releaseListener();
    },
  };
}
