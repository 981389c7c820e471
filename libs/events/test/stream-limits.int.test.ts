import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DiscardPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { freePort, startNats, type TestNats } from '@dam/testing';
import {
  ASSET_EVENTS,
  COLLECTIONS,
  connectNats,
  streamConfigs,
  DAM_INTERNAL,
  DATA_SCHEMAS,
  ASSET_PURGES,
  ensureStreams,
  STREAMS,
  streamMaxBytes,
  type StreamName,
} from '../src';

/**
 * Production form D6 (issue 31): every stream has a byte limit from one budget (NATS_STREAMS_MAX_BYTES), applied on
 * create and on update, and at that limit a stream does what STREAM_DISCARD says, against a real nats-server.
 */
describe('stream byte limits', () => {
  let server: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let js: JetStreamClient;
  // Small enough to fill in a few hundred publishes: the smallest share (5 %) is 100 000 bytes.
  const BUDGET = 2_000_000;
  const body = new Uint8Array(4_000).fill(120);

  beforeAll(async () => {
    server = await startNats();
    nc = await connectNats(server.url, 'stream-limits-test', server.seed('admin'));
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
  });
  afterAll(async () => {
    await nc.drain();
    await server.stop();
  });

  const limitsOf = async (): Promise<Record<string, readonly [number, string]>> =>
    Object.fromEntries(
      await Promise.all(STREAMS.map(async (s) => [s, [(await jsm.streams.info(s)).config.max_bytes, (await jsm.streams.info(s)).config.discard]] as const)),
    );
  const state = async (s: StreamName) => (await jsm.streams.info(s)).state;

  it('sets max_bytes from the budget on streams created without one, and lifts it again when the budget is unset', async () => {
    // As a release before D6 left them: created without a byte limit.
    await ensureStreams(nc);
    expect(Object.values(await limitsOf()).map(([max]) => max)).toEqual(STREAMS.map(() => -1));

    const done = await ensureStreams(nc, { maxBytes: BUDGET });
    expect(done.map((d) => d.action)).toEqual(STREAMS.map(() => 'updated'));
    const limits = streamMaxBytes(BUDGET);
    expect(await limitsOf()).toEqual({
      [ASSET_EVENTS]: [limits[ASSET_EVENTS], DiscardPolicy.Old],
      [DAM_INTERNAL]: [limits[DAM_INTERNAL], DiscardPolicy.Old],
      [ASSET_PURGES]: [limits[ASSET_PURGES], DiscardPolicy.Old],
      [DATA_SCHEMAS]: [limits[DATA_SCHEMAS], DiscardPolicy.New],
      [COLLECTIONS]: [limits[COLLECTIONS], DiscardPolicy.New],
    });
    expect(Object.values(limits).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(BUDGET);
    expect(Math.min(...Object.values(limits))).toBeGreaterThanOrEqual(BUDGET * 0.05 - 1);

    // The configuration wins both ways: without a budget the limit goes (an update merges what it is given).
    await ensureStreams(nc);
    expect(Object.values(await limitsOf()).map(([max]) => max)).toEqual(STREAMS.map(() => -1));
    await ensureStreams(nc, { maxBytes: BUDGET });
  });

  it('ASSET_EVENTS and DAM_INTERNAL drop their oldest messages at the limit and never refuse a publish', async () => {
    for (const [stream, subject] of [
      [ASSET_EVENTS, 'assets.events.g1.file-saved'],
      [DAM_INTERNAL, 'dam.internal.jobs.run.conversion'],
    ] as const) {
      const max = streamMaxBytes(BUDGET)[stream];
      const count = Math.ceil((2 * max) / body.length);
      for (let i = 0; i < count; i++) await js.publish(subject, body);
      const s = await state(stream);
      expect([stream, s.bytes <= max, s.first_seq > 1, s.last_seq]).toEqual([stream, true, true, count]);
      // What it kept is the newest: the window shrank from the old end.
      expect(s.last_seq - s.first_seq + 1).toBe(s.messages);
    }
  });

  it('DATA_SCHEMAS and COLLECTIONS refuse a new message at the limit and keep every state they hold', async () => {
    for (const [stream, subjectOf] of [
      [DATA_SCHEMAS, (i: number) => `dam.schemas.g1.${i}`],
      [COLLECTIONS, (i: number) => `dam.collections.g1.asset.a${i}`],
    ] as const) {
      const max = streamMaxBytes(BUDGET)[stream];
      let accepted = 0;
      let refusal: unknown;
      for (let i = 1; i <= Math.ceil((2 * max) / body.length); i++) {
        try {
          await js.publish(subjectOf(i), body);
          accepted++;
        } catch (error) {
          refusal = error;
          break;
        }
      }
      expect([stream, String(refusal)]).toEqual([stream, expect.stringMatching(/maximum bytes/i)]);
      const s = await state(stream);
      // Nothing dropped: every schema (collection state) published before the limit is still there.
      expect([stream, s.first_seq, s.messages, s.bytes <= max]).toEqual([stream, 1, accepted, true]);
      expect(accepted).toBeGreaterThan(0);
    }
  });

  it('never lowers the limit of a stream kept for ever below what it holds (JetStream would delete its oldest states)', async () => {
    await jsm.streams.purge(COLLECTIONS);
    await ensureStreams(nc);
    const states = Math.ceil((1.5 * streamMaxBytes(BUDGET)[COLLECTIONS]) / body.length);
    for (let i = 1; i <= states; i++) await js.publish(`dam.collections.g2.asset.a${i}`, body);
    const holds = (await state(COLLECTIONS)).bytes;

    const done = await ensureStreams(nc, { maxBytes: BUDGET });
    expect(done.find((d) => d.name === COLLECTIONS)?.maxBytesNotLowered).toEqual({ wanted: streamMaxBytes(BUDGET)[COLLECTIONS], holds, kept: -1 });
    expect([(await state(COLLECTIONS)).messages, (await jsm.streams.info(COLLECTIONS)).config.max_bytes]).toEqual([states, -1]);
    // The others took theirs; a budget whose share holds it applies.
    expect(done.filter((d) => d.maxBytesNotLowered).map((d) => d.name)).toEqual([COLLECTIONS]);
    await ensureStreams(nc, { maxBytes: 4 * BUDGET });
    expect([(await state(COLLECTIONS)).messages, (await jsm.streams.info(COLLECTIONS)).config.max_bytes]).toEqual([
      states,
      streamMaxBytes(4 * BUDGET)[COLLECTIONS],
    ]);
  });

  it('refuses at start a budget JetStream cannot reserve under its max_file_store, with the setting named', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-small-'));
    const port = await freePort();
    writeFileSync(path.join(dir, 'nats.conf'), `listen: 127.0.0.1:${port}\njetstream { store_dir: ${JSON.stringify(dir)}, max_file_store: 10MB }\n`);
    const small = spawn('nats-server', ['-c', path.join(dir, 'nats.conf')], { stdio: 'ignore' });
    try {
      let conn: NatsConnection | undefined;
      for (let i = 0; !conn && i < 100; i++) {
        conn = await connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false }).catch(() => undefined);
        if (!conn) await new Promise((r) => setTimeout(r, 100));
      }
      if (!conn) throw new Error('nats-server with a 10 MB store did not start');
      await expect(ensureStreams(conn, { maxBytes: 20_000_000 })).rejects.toThrow(/insufficient storage.*NATS_STREAMS_MAX_BYTES/);
      expect((await ensureStreams(conn, { maxBytes: 8_000_000 })).map((d) => d.name)).toEqual(streamConfigs().map((c) => c.name));
      await conn.close();
    } finally {
      small.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
