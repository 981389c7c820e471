import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { trace } from '@opentelemetry/api';
import { AppError } from '@dam/errors';
import { currentTraceIds, startTelemetry, type Telemetry } from '@dam/telemetry';
import { scaled, startNats, type TestNats } from '@dam/testing';
import {
  ASSET_EVENTS,
  assetEventSubject,
  connectNats,
  consume,
  ensureStreams,
  FILE_SAVED,
  InvalidEventPayloadError,
  publishEvent,
  type Consumer,
  type FileSavedEvent,
} from '../src';
import { fileSavedEvent } from './fixtures';
import { captureLogger, metric, streamMessages, until } from './helpers';

describe('publish and consume against nats-server', () => {
  let server: TestNats;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let telemetry: Telemetry;
  const consumers: Consumer[] = [];
  let durableSeq = 0;

  beforeAll(async () => {
    telemetry = startTelemetry('events-test');
    server = await startNats();
    nc = await connectNats(server.url, 'events-test', server.seed('admin'));
    await ensureStreams(nc);
    await ensureStreams(nc); // a second service starting updates instead of failing
    js = jetstream(nc);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    await (await jetstreamManager(nc)).streams.purge(ASSET_EVENTS);
  });
  afterAll(async () => {
    await nc.drain();
    await server.stop();
    await telemetry.shutdown();
  });

  // Each test gets its own group (subject) and durable, so leftovers of one test never reach another.
  const setup = () => {
    durableSeq += 1;
    const group = `g${durableSeq}`;
    return { group, durable: `test-${durableSeq}`, subject: assetEventSubject(group, 'file-saved') };
  };

  it('round-trips a validated event, carrying the trace context', async () => {
    const { group, durable, subject } = setup();
    const received: Array<{ event: FileSavedEvent; traceId?: string; deliveryCount: number }> = [];
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        handler: async (event, ctx) => {
          received.push({ event, traceId: (currentTraceIds() as { trace_id?: string }).trace_id, deliveryCount: ctx.deliveryCount });
        },
      }),
    );
    const sentTraceId = await trace.getTracer('t').startActiveSpan('upload', async (span) => {
      const ack = await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('e1', group), { msgId: 'e1' });
      expect(ack.duplicate).toBe(false);
      const again = await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('e1', group), { msgId: 'e1' });
      expect(again.duplicate).toBe(true);
      span.end();
      return span.spanContext().traceId;
    });
    await until(() => received.length === 1);
    expect(received[0]?.event).toEqual(fileSavedEvent('e1', group));
    expect(received[0]?.traceId).toBe(sentTraceId);
    expect(received[0]?.deliveryCount).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toHaveLength(1);
  });

  it('refuses to publish an invalid payload', async () => {
    const { group, subject } = setup();
    const before = await streamMessages(nc, ASSET_EVENTS);
    const bad = { ...fileSavedEvent('e2', group), data: { nope: true } } as unknown as FileSavedEvent;
    await expect(publishEvent(js, subject, FILE_SAVED.schema, bad, { msgId: 'e2' })).rejects.toBeInstanceOf(InvalidEventPayloadError);
    expect(await streamMessages(nc, ASSET_EVENTS)).toBe(before);
  });

  it('terminates an invalid message without calling the handler', async () => {
    const { group, durable, subject } = setup();
    const logger = captureLogger();
    const handled: string[] = [];
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger,
        ackWaitMs: 1000,
        handler: async (event) => void handled.push(event.id),
      }),
    );
    await js.publish(subject, JSON.stringify({ hello: 'world' }), { msgID: 'raw-1' });
    await js.publish(subject, 'not json', { msgID: 'raw-2' });
    await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('ok-1', group), { msgId: 'ok-1' });
    await until(() => handled.length === 1);
    await until(() => logger.lines.filter((l) => l.level === 'error').length === 2);
    // Counted once the term or ack is sent, and taken by the server after that: waited for, not assumed.
    await until(async () => (await metric('events_messages_handled_total', { durable, outcome: 'term' })) === 2);
    await until(async () => (await metric('events_messages_handled_total', { durable, outcome: 'ack' })) === 1);
    const settled = async () => (await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, durable)).num_ack_pending === 0;
    await until(settled);
    // Terminated messages are not redelivered after ack_wait: the wait covers the 1 s ack wait (the server's clock)
    // and then the time a wrong redelivery would take this process to handle (stretched on a slower machine).
    await new Promise((r) => setTimeout(r, 1000 + scaled(500)));
    expect(handled).toEqual(['ok-1']);
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(2);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'term' })).toBe(2);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'ack' })).toBe(1);
    const info = await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, durable);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });

  it("calls onAcked once the server has taken the ack: the durable's ack floor covers the message by then", async () => {
    const { group, durable, subject } = setup();
    const floors: Array<{ seq: number; floor: number }> = [];
    const jsm = await jetstreamManager(nc);
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        handler: async () => undefined,
        onAcked: (_e, ctx) => {
          void jsm.consumers.info(ASSET_EVENTS, durable).then((i) => floors.push({ seq: ctx.msg.info.streamSequence, floor: i.ack_floor.stream_seq }));
        },
      }),
    );
    for (const id of ['a-1', 'a-2', 'a-3']) await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent(id, group), { msgId: id });
    await until(() => floors.length === 3);
    for (const f of floors) expect(f.floor).toBeGreaterThanOrEqual(f.seq);
  });

  it('naks a failed attempt and handles the redelivery', async () => {
    const { group, durable, subject } = setup();
    const attempts: number[] = [];
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        backoffMs: [200],
        maxDeliver: 5,
        handler: async (_event, ctx) => {
          attempts.push(ctx.deliveryCount);
          if (ctx.deliveryCount < 3) throw new Error('transient');
        },
      }),
    );
    const started = Date.now();
    await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('e3', group), { msgId: 'e3' });
    await until(() => attempts.length === 3);
    expect(attempts).toEqual([1, 2, 3]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400); // two backoffs of 200 ms
    // The third attempt is pushed when the handler starts; its ack and metrics come after it returns.
    await until(async () => (await metric('events_messages_handled_total', { durable, outcome: 'ack' })) === 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(attempts).toHaveLength(3); // acked after the success
    expect(await metric('events_messages_handled_total', { durable, outcome: 'nak' })).toBe(2);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'ack' })).toBe(1);
    expect(await metric('events_handler_duration_seconds_count', { durable })).toBe(3);
  });

  it('runs a handler failing because a dependency is down again in place (same delivery), and counts it as a delivery past outageRetryMs', async () => {
    const { group, durable, subject } = setup();
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const outage: number[] = [];
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        backoffMs: [200],
        maxDeliver: 5,
        handler: async (event, ctx) => {
          outage.push(ctx.deliveryCount);
          // The dependency is back on the third try; a service's 503 counts as down too.
          if (event.id === 'e8' && outage.length === 1) throw refused();
          if (event.id === 'e8' && outage.length === 2) throw new AppError('UNAVAILABLE', 'SETTINGS_UNAVAILABLE', 'auth answered 503');
        },
      }),
    );
    await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('e8', group), { msgId: 'e8' });
    await until(() => outage.length === 3);
    expect(outage).toEqual([1, 1, 1]);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'nak' })).toBe(0);

    // With no time to retry in place, the same failure is a failed delivery, nak'ed into the backoff.
    const second = setup();
    const counted: number[] = [];
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable: second.durable,
        filterSubjects: second.subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        backoffMs: [200],
        maxDeliver: 5,
        outageRetryMs: 0,
        handler: async (_event, ctx) => {
          counted.push(ctx.deliveryCount);
          if (ctx.deliveryCount < 2) throw refused();
        },
      }),
    );
    await publishEvent(js, second.subject, FILE_SAVED.schema, fileSavedEvent('e9', second.group), { msgId: 'e9' });
    await until(() => counted.length === 2);
    expect(counted).toEqual([1, 2]);
  });

  it('hands the message to onDeadLetter after the last delivery, then terminates it', async () => {
    const { group, durable, subject } = setup();
    const attempts: number[] = [];
    const dead: Array<{ id: string; error: string }> = [];
    let deadLetterFailures = 1;
    consumers.push(
      await consume({
        nc,
        stream: ASSET_EVENTS,
        durable,
        filterSubjects: subject,
        schema: FILE_SAVED.schema,
        logger: captureLogger(),
        backoffMs: [50],
        maxDeliver: 3,
        handler: async (_event, ctx) => {
          attempts.push(ctx.deliveryCount);
          throw new Error(`broken ${ctx.deliveryCount}`);
        },
        onDeadLetter: async (event, error) => {
          // The hook failing once must not lose the message: it is retried without running the handler again.
          if (deadLetterFailures-- > 0) throw new Error('database down');
          dead.push({ id: event.id, error: (error as Error).message });
        },
      }),
    );
    await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('e4', group), { msgId: 'e4' });
    await until(() => dead.length === 1);
    expect(attempts).toEqual([1, 2, 3]);
    expect(dead[0]?.id).toBe('e4');
    // The hook returns before the term is sent and counted, and the server takes the term after that.
    await until(async () => (await metric('events_messages_handled_total', { durable, outcome: 'dead_letter' })) === 1);
    await until(async () => (await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, durable)).num_ack_pending === 0);
    await new Promise((r) => setTimeout(r, 500));
    expect(dead).toHaveLength(1);
    // Two failed attempts and one failed dead-letter hook were nak'ed; the hook's retry ended it.
    expect(await metric('events_messages_handled_total', { durable, outcome: 'nak' })).toBe(3);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'dead_letter' })).toBe(1);
    expect(await metric('events_messages_handled_total', { durable, outcome: 'ack' })).toBe(0);
    const info = await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, durable);
    expect(info.num_ack_pending).toBe(0);
  });

  it('never runs more handlers at once than its concurrency, and stop() waits for them', async () => {
    const { group, durable, subject } = setup();
    let running = 0;
    let peak = 0;
    let done = 0;
    const consumer = await consume({
      nc,
      stream: ASSET_EVENTS,
      durable,
      filterSubjects: subject,
      schema: FILE_SAVED.schema,
      logger: captureLogger(),
      concurrency: 3,
      handler: async () => {
        running += 1;
        peak = Math.max(peak, running);
        // Long enough for the next publishes to arrive while it runs, also on a slower machine.
        await new Promise((r) => setTimeout(r, scaled(100)));
        running -= 1;
        done += 1;
      },
    });
    for (let i = 0; i < 12; i += 1) {
      await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent(`c${i}`, group), { msgId: `c${i}` });
    }
    await until(() => done >= 4);
    const info = await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, durable);
    expect(info.num_ack_pending).toBeLessThanOrEqual(3);
    await until(() => done === 12);
    expect(peak).toBe(3);

    // Graceful stop: an in-flight handler finishes before stop() resolves.
    let finished = false;
    const slow = await consume({
      nc,
      stream: ASSET_EVENTS,
      durable: `${durable}-slow`,
      filterSubjects: subject,
      schema: FILE_SAVED.schema,
      logger: captureLogger(),
      deliverPolicy: 'new',
      handler: async (_e, ctx) => {
        const release = ctx.keepAlive();
        // Still running when stop() is called below, also on a slower machine.
        await new Promise((r) => setTimeout(r, scaled(500)));
        release();
        finished = true;
      },
    });
    await publishEvent(js, subject, FILE_SAVED.schema, fileSavedEvent('slow', group), { msgId: 'slow' });
    await until(async () => (await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, `${durable}-slow`)).num_ack_pending === 1);
    await slow.stop();
    expect(finished).toBe(true);
    await consumer.stop();
  });
});
