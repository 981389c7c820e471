import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { createDatabase, scaled, startNats, type TestNats } from '@dam/testing';
import { Pool, type PoolClient } from 'pg';
import { ASSET_EVENTS, assetEventSubject, connectNats, ensureStreams, InvalidEventPayloadError } from '@dam/events';
// The events lib's own test fixtures: the same event shapes and stream helpers.
import { fileSavedEvent } from '../../events/test/fixtures';
import { captureLogger, metric, streamMessages, until } from '../../events/test/helpers';
import { claimMessage, INBOX_MIGRATION_SQL, OUTBOX_MIGRATION_SQL, startOutboxRelay, writeOutbox, type OutboxRelay } from '../src';

describe('outbox against PostgreSQL and nats-server', () => {
  let server: TestNats;
  let nc: NatsConnection;
  let pool: Pool;
  const relays: OutboxRelay[] = [];
  const subject = assetEventSubject('g1', 'file-saved');

  beforeAll(async () => {
    server = await startNats();
    nc = await connectNats(server.url, 'outbox-test', server.seed('admin'));
    await ensureStreams(nc);
    pool = new Pool({ connectionString: await createDatabase('outbox'), max: 8 });
    await pool.query(OUTBOX_MIGRATION_SQL);
    await pool.query(OUTBOX_MIGRATION_SQL); // re-runnable
    await pool.query(INBOX_MIGRATION_SQL);
  });
  beforeEach(async () => {
    await pool.query('TRUNCATE outbox');
    await (await jetstreamManager(nc)).streams.purge(ASSET_EVENTS);
  });
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    await pool.end();
    await nc.drain();
    await server.stop();
  });

  async function inTransaction(fn: (client: PoolClient) => Promise<void>, commit = true): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await fn(client);
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    } finally {
      client.release();
    }
  }

  async function readStream(): Promise<Array<{ id: string; msgId: string; traceparent: string }>> {
    const jsm = await jetstreamManager(nc);
    const count = (await jsm.streams.info(ASSET_EVENTS)).state.messages;
    const out = [];
    for (let seq = 1; out.length < count; seq += 1) {
      const m = await jsm.streams.getMessage(ASSET_EVENTS, { seq });
      if (!m) continue;
      out.push({ id: (m.json() as { id: string }).id, msgId: m.header.get('Nats-Msg-Id'), traceparent: m.header.get('traceparent') });
    }
    return out;
  }

  it('never publishes a row written in a rolled-back transaction', async () => {
    await inTransaction(async (c) => writeOutbox(c, { id: 'rolled', subject, payload: fileSavedEvent('rolled') }), false);
    await inTransaction(async (c) => writeOutbox(c, { id: 'kept', subject, payload: fileSavedEvent('kept') }));
    const relay = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 60_000 });
    relays.push(relay);
    expect(await relay.drainOnce()).toBe(1);
    expect(await relay.drainOnce()).toBe(0);
    expect((await readStream()).map((m) => m.id)).toEqual(['kept']);
  });

  it("publishes a committed row at once, woken by the commit's notification, not by the next poll", async () => {
    const relay = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 60_000 });
    relays.push(relay);
    // The listener connects in the background: the commit waits until its LISTEN has run (a session of this
    // database whose last statement it was), or its notification would reach nobody.
    await until(
      async () =>
        (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query ILIKE 'LISTEN %'`))
          .rows[0].n >= 1,
    );
    const started = Date.now();
    await inTransaction(async (c) => writeOutbox(c, { id: 'woken', subject, payload: fileSavedEvent('woken') }));
    await until(async () => (await readStream()).length > 0, 5000);
    expect((await readStream()).map((m) => m.id)).toEqual(['woken']);
    // Far below the 60 s poll, however slow the machine.
    expect(Date.now() - started).toBeLessThan(scaled(5000));
  });

  it('polls an empty outbox with one query, taking no connection and no lock, and still publishes what a poll finds', async () => {
    let connects = 0;
    // The relay's pool as seen by it: its own connect() calls (a transaction, or the listener) counted, not the
    // pool's internal ones (a pool.query).
    const counted = new Proxy(pool, {
      get: (target, key) => {
        if (key === 'connect') return () => ((connects += 1), target.connect());
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const relay = startOutboxRelay({ pool: counted, nc, logger: captureLogger(), intervalMs: 20 });
    relays.push(relay);
    await new Promise((r) => setTimeout(r, scaled(400))); // about 20 polls, also on a slower machine
    expect(connects).toBeLessThanOrEqual(1); // the listener's connection only
    // A row committed without a notification: the next poll sees it waiting and drains it.
    await pool.query(`INSERT INTO outbox (id, subject, payload) VALUES ('polled', $1, $2)`, [subject, JSON.stringify(fileSavedEvent('polled'))]);
    await until(async () => (await readStream()).length === 1);
    expect((await readStream()).map((m) => m.id)).toEqual(['polled']);
  });

  it('prunes published rows past the retention and never unpublished ones', async () => {
    for (const id of ['old-published', 'new-published', 'old-unpublished']) {
      await inTransaction(async (c) => writeOutbox(c, { id, subject, payload: fileSavedEvent(id) }));
    }
    await pool.query(`UPDATE outbox SET published_at = now() - interval '2 hours' WHERE id = 'old-published'`);
    await pool.query(`UPDATE outbox SET published_at = now() WHERE id = 'new-published'`);
    await pool.query(`UPDATE outbox SET created_at = now() - interval '2 hours' WHERE id = 'old-unpublished'`);
    const relay = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 60_000, retentionMs: 3600_000 });
    relays.push(relay);
    expect(await relay.pruneOnce()).toBe(1);
    const left = await pool.query<{ id: string }>('SELECT id FROM outbox ORDER BY seq');
    expect(left.rows.map((r) => r.id)).toEqual(['new-published', 'old-unpublished']);
  });

  it('refuses an invalid payload or an unknown subject at write time', async () => {
    await expect(
      inTransaction(async (c) => writeOutbox(c, { id: 'bad', subject, payload: { ...fileSavedEvent('bad'), time: 'never' } })),
    ).rejects.toBeInstanceOf(InvalidEventPayloadError);
    await expect(inTransaction(async (c) => writeOutbox(c, { id: 'x', subject: 'dam.internal.unknown', payload: {} }))).rejects.toBeInstanceOf(
      InvalidEventPayloadError,
    );
    expect((await pool.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n).toBe(0);
  });

  it('drains in commit order with the row id as Nats-Msg-Id and the captured traceparent', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    for (let i = 0; i < 25; i += 1) {
      await inTransaction(async (c) =>
        writeOutbox(c, { id: `o${i}`, subject, payload: fileSavedEvent(`o${i}`), headers: i === 0 ? { traceparent } : undefined }),
      );
    }
    relays.push(startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 20, batchSize: 10 }));
    await until(async () => (await streamMessages(nc, ASSET_EVENTS)) === 25);
    const messages = await readStream();
    expect(messages.map((m) => m.id)).toEqual(Array.from({ length: 25 }, (_, i) => `o${i}`));
    expect(messages.every((m) => m.msgId === m.id)).toBe(true);
    expect(messages[0]?.traceparent).toBe(traceparent);
    await until(async () => (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n === 0);
  });

  it('publishes each row exactly once with two relays running, and again-published rows are dropped by msgID', async () => {
    const a = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 5, batchSize: 3 });
    const b = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 5, batchSize: 3 });
    relays.push(a, b);
    for (let i = 0; i < 40; i += 1) {
      await inTransaction(async (c) => writeOutbox(c, { id: `t${i}`, subject, payload: fileSavedEvent(`t${i}`) }));
    }
    await until(async () => (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n === 0);
    await new Promise((r) => setTimeout(r, 200));
    expect(await streamMessages(nc, ASSET_EVENTS)).toBe(40);
    expect((await readStream()).map((m) => m.id)).toEqual(Array.from({ length: 40 }, (_, i) => `t${i}`));

    // A crash between publish and commit leaves rows unmarked: publishing them again adds nothing.
    await pool.query(`UPDATE outbox SET published_at = NULL WHERE id IN ('t38', 't39')`);
    await until(async () => (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n === 0);
    expect(await streamMessages(nc, ASSET_EVENTS)).toBe(40);
  });

  it('publishes nothing and locks no row while another drainer holds the lock, and drains once it is free', async () => {
    const relay = startOutboxRelay({ pool, nc, logger: captureLogger(), intervalMs: 60_000, lockKey: 4242 });
    relays.push(relay);
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(4242)');
      await pool.query(`INSERT INTO outbox (id, subject, payload) VALUES ('held', $1, $2)`, [subject, JSON.stringify(fileSavedEvent('held'))]);
      expect(await relay.drainOnce()).toBe(0);
      // The row was neither published nor left locked by the relay that lost.
      const free = await pool.connect();
      try {
        await free.query('BEGIN');
        expect((await free.query(`SELECT id FROM outbox WHERE id = 'held' FOR UPDATE NOWAIT`)).rows).toHaveLength(1);
        await free.query('ROLLBACK');
      } finally {
        free.release();
      }
      expect(await streamMessages(nc, ASSET_EVENTS)).toBe(0);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect(await relay.drainOnce()).toBe(1);
    expect((await pool.query(`SELECT published_at FROM outbox WHERE id = 'held'`)).rows[0].published_at).not.toBeNull();
    expect(await streamMessages(nc, ASSET_EVENTS)).toBe(1);
  });

  it('keeps rows when JetStream refuses them and publishes them once it accepts', async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(ASSET_EVENTS);
    await inTransaction(async (c) => writeOutbox(c, { id: 'late', subject, payload: fileSavedEvent('late') }));
    await pool.query(`UPDATE outbox SET created_at = now() - interval '90 seconds'`);
    const logger = captureLogger();
    const relay = startOutboxRelay({ pool, nc, logger, intervalMs: 60_000 });
    relays.push(relay);
    const [published, failures] = [await metric('outbox_published_total'), await metric('outbox_publish_failures_total')];
    expect(await relay.drainOnce()).toBe(0);
    expect(logger.lines.some((l) => l.level === 'warn')).toBe(true);
    // The lag operators watch: one row waiting, for about 90 s.
    expect(await metric('outbox_unpublished_rows')).toBe(1);
    expect(await metric('outbox_oldest_unpublished_age_seconds')).toBeGreaterThanOrEqual(90);
    expect(await metric('outbox_publish_failures_total')).toBe(failures + 1);
    await ensureStreams(nc);
    expect(await relay.drainOnce()).toBe(1);
    expect(await streamMessages(nc, ASSET_EVENTS)).toBe(1);
    expect(await metric('outbox_published_total')).toBe(published + 1);
    expect(await metric('outbox_unpublished_rows')).toBe(0);
    expect(await metric('outbox_oldest_unpublished_age_seconds')).toBe(0);
  });

  it('claims a message id once: a redelivery inside a later transaction changes nothing', async () => {
    const claims: boolean[] = [];
    await inTransaction(async (c) => {
      claims.push(await claimMessage(c, 'msg-1'));
    }, false); // rolled back: the claim goes with it
    await inTransaction(async (c) => {
      claims.push(await claimMessage(c, 'msg-1'));
    });
    await inTransaction(async (c) => {
      claims.push(await claimMessage(c, 'msg-1'));
    });
    expect(claims).toEqual([true, true, false]);
  });
});
