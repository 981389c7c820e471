import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { connectionWatch, connectNats, consume, ensureStreams, natsCall, NatsUnavailableError, natsReachable, publishEvent } from '../src';
import { captureLogger, until } from './helpers';
import { z } from 'zod';

/**
 * The connection watch and natsCall against a real nats-server that stops and comes back on the same port and
 * store (a NATS restart under running services).
 */
describe('NATS calls across a restart of the server', () => {
  let server: TestNats;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNats();
    nc = await connectNats(server.url, 'admin', server.seed('admin'));
    await ensureStreams(nc);
  });
  afterAll(async () => {
    await nc.close();
    await server.stop();
  });
  afterEach(async () => {
    if (!server.running()) await server.resume();
    await until(() => connectionWatch(nc).connected(), 10_000);
  });

  it('fails at once, as a 503, while the server is down, and works again once it is back', async () => {
    const kv = await new Kvm(nc).create('CONNECTION_TEST', { history: 1 });
    await natsCall(nc, () => kv.put('a', '1'));

    await server.pause();
    await until(() => !connectionWatch(nc).connected(), 5000);
    expect(await natsReachable(nc)).toBe(false);
    const started = Date.now();
    const failure = await natsCall(nc, () => kv.put('a', '2'), { graceMs: 300, retryMs: 5000 }).catch((error: unknown) => error);
    // The grace, not the request's 5 s timeout nor the retry window: nothing can be sent while the connection is down.
    expect(Date.now() - started).toBeLessThan(1500);
    expect(failure).toBeInstanceOf(NatsUnavailableError);
    // What the HTTP layer answers 503 for (libs/http's isDependencyUnavailable).
    expect(failure).toMatchObject({ code: 'NATS_UNAVAILABLE' });

    await server.resume();
    await until(() => connectionWatch(nc).connected(), 10_000);
    await natsCall(nc, () => kv.put('a', '3'));
    expect((await kv.get('a'))?.string()).toBe('3');
  });

  it('waits for the server within its grace and then succeeds (a background call rides out the outage)', async () => {
    const js = jetstream(nc);
    await server.pause();
    await until(() => !connectionWatch(nc).connected(), 5000);
    const call = natsCall(nc, () => js.publish('dam.internal.jobs.reports', JSON.stringify({ n: 1 }), { msgID: 'conn-test-1' }), {
      graceMs: 20_000,
      retryMs: 20_000,
    });
    await new Promise((r) => setTimeout(r, 1000));
    const resumed = Date.now();
    await server.resume();
    const ack = await call;
    expect(ack.stream).toBe('DAM_INTERNAL');
    // Sent after the reconnection, not lost in the buffer the reconnection discards (that one would time out in 5 s).
    expect(Date.now() - resumed).toBeLessThan(4000);
  });

  it('rejects a call whose answer is awaited when the connection goes, instead of waiting out its timeout', async () => {
    const js = jetstream(nc);
    const watch = connectionWatch(nc);
    // A request its responder never answers; it would time out after 20 s.
    const silent = nc.subscribe('nobody.answers.here');
    await nc.flush();
    const pending = watch.untilDisconnected(nc.request('nobody.answers.here', '', { timeout: 20_000 }));
    pending.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));
    const stopped = Date.now();
    await server.pause();
    await expect(pending).rejects.toThrow(/went down/);
    expect(Date.now() - stopped).toBeLessThan(6000);
    silent.unsubscribe();
    await server.resume();
    await until(() => watch.connected(), 10_000);
    expect((await js.publish('dam.internal.jobs.reports', '{}', { msgID: 'conn-test-2' })).stream).toBe('DAM_INTERNAL');
  });

  it('acks a message handled while the server was down once it is back: it is not delivered again', async () => {
    const js = jetstream(nc);
    const logger = captureLogger();
    const schema = z.object({ n: z.number() });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    const consumer = await consume({
      nc,
      stream: 'DAM_INTERNAL',
      durable: 'connection-test',
      filterSubjects: 'dam.internal.usage.api_requests',
      schema,
      logger,
      ackWaitMs: 30_000,
      handler: async ({ n }) => {
        seen.push(n);
        await gate;
      },
    });
    try {
      await js.publish('dam.internal.usage.api_requests', JSON.stringify({ n: 7 }), { msgID: 'conn-test-3' });
      await until(() => seen.length === 1, 10_000);
      // The handler finishes while the server is down: its ack waits for the reconnection instead of being lost.
      await server.pause();
      await until(() => !connectionWatch(nc).connected(), 5000);
      release();
      // Time for the handler to finish and try its ack while the server is down (longer on a slower machine).
      await new Promise((r) => setTimeout(r, scaled(500)));
      await server.resume();
      await until(async () => {
        const info = await natsCall(nc, () =>
          jetstream(nc)
            .consumers.get('DAM_INTERNAL', 'connection-test')
            .then((c) => c.info()),
        ).catch(() => undefined);
        return info !== undefined && info.num_ack_pending === 0 && info.ack_floor.stream_seq >= info.delivered.stream_seq;
      }, 10_000);
      // Well within the 30 s ack wait: had the ack been lost, the message would still be pending here.
      expect(seen).toEqual([7]);
    } finally {
      await consumer.stop();
    }
  });

  it('publishEvent through natsCall stores a repeated publish once (the msgId makes retries safe)', async () => {
    const schema = z.object({ n: z.number() });
    const js = jetstream(nc);
    const first = await natsCall(nc, () => publishEvent(js, 'dam.internal.usage.cdn_bytes', schema, { n: 1 }, { msgId: 'conn-test-4' }));
    const again = await natsCall(nc, () => publishEvent(js, 'dam.internal.usage.cdn_bytes', schema, { n: 1 }, { msgId: 'conn-test-4' }));
    expect(first.duplicate).toBe(false);
    expect(again).toMatchObject({ duplicate: true, seq: first.seq });
  });
});
