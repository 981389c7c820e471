import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type MsgHdrs, type NatsConnection } from '@nats-io/nats-core';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { isUnavailable } from '@dam/errors';
import { withExtractedContext } from '@dam/telemetry';
import type { z } from 'zod';
import { connectionWatch, natsCall } from './connection';
import { issuesOf } from './errors';
import { consumeMetrics, type ConsumeOutcome } from './events.metrics';
import { errorFields, type EventLogger } from './logger';
import { ELECTION_RETRY_MS, isNotFound, retryTransient } from './nats';

export interface MessageContext {
  subject: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  headers: MsgHdrs | undefined;
  msg: JsMsg;
  /** Tells the server the message is still being worked on (resets its ack timer once). */
  working(): void;
  /** Calls `working()` every ackWait/3 until the returned function is called: wrap long work with it. */
  keepAlive(): () => void;
}

export interface ConsumeOptions<S extends z.ZodType> {
  nc: NatsConnection;
  stream: string;
  durable: string;
  /** One subject filter (two or more need nats-server 2.10). */
  filterSubjects?: string | string[];
  schema: S;
  handler: (payload: z.output<S>, ctx: MessageContext) => Promise<void>;
  logger: EventLogger;
  /** Messages handled at once by this process; also the most it ever holds un-acked. */
  concurrency?: number;
  ackWaitMs?: number;
  /** Deliveries before the message is given up (handed to onDeadLetter). */
  maxDeliver?: number;
  /** Delay before redelivery after the n-th failure (last value repeats). */
  backoffMs?: number[];
  /**
   * Called once the last delivery failed, so the owner records an ERROR state. If it throws, the message is
   * redelivered and only onDeadLetter is retried (up to DEAD_LETTER_RETRIES more times).
   */
  onDeadLetter?: (payload: z.output<S>, error: unknown, ctx: MessageContext) => Promise<void>;
  /** Where a new durable starts; existing durables keep their position. */
  deliverPolicy?: 'all' | 'new';
  /**
   * An existing durable with another filter is deleted and created anew instead of updated: nats-server 2.9 accepts a
   * filter update but then delivers nothing. Its position is lost, so only for a filter whose old subjects carry nothing
   * the new one wants (the durable's identity needs the right to delete it).
   */
  replaceOnFilterChange?: boolean;
  /** Consumer-wide cap on un-acked messages across every process sharing the durable. */
  maxAckPending?: number;
  /** How long one pull waits for messages (also bounds how long `stop()` may wait for it). */
  fetchExpiresMs?: number;
  /**
   * How long a handler failing because a dependency is down (PostgreSQL, S3, NATS, another service: refused, reset,
   * unreachable) is run again in place, the message kept alive, instead of being nak'ed into the backoff: an outage
   * neither spends deliveries nor leaves the message waiting out a 30 s backoff after the dependency is back.
   * 5 minutes by default; past it the failure counts as any other.
   */
  outageRetryMs?: number;
  /**
   * Called once the server has confirmed the ack of a handled message (its consumer's ack floor includes it
   * then): with it, acks are confirmed round trips instead of fire-and-forget.
   */
  onAcked?: (payload: z.output<S>, ctx: MessageContext) => void;
}

export interface Consumer {
  stop(): Promise<void>;
}

export const DEAD_LETTER_RETRIES = 5;
// term() carries no reason: nats-server before 2.10 ignores a "+TERM <reason>" ack, which would redeliver
// the message instead of ending it. The reason goes to the log.
const tracer = trace.getTracer('@dam/events');

/** Creates or updates the durable pull consumer and starts handling its messages. */
export async function consume<S extends z.ZodType>(options: ConsumeOptions<S>): Promise<Consumer> {
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const ackWaitMs = options.ackWaitMs ?? 30_000;
  const maxDeliver = Math.max(1, options.maxDeliver ?? 5);
  const backoffMs = options.backoffMs?.length ? options.backoffMs : [1_000, 5_000, 30_000];
  const outageRetryMs = options.outageRetryMs ?? 5 * 60_000;
  const { logger, stream, durable } = options;
  const metrics = consumeMetrics();
  const counted = (outcome: ConsumeOutcome) => metrics.handled.inc({ durable, outcome });

  await ensureConsumer(options.nc, stream, options.replaceOnFilterChange === true, {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ackWaitMs),
    // The server stops after the client-side maxDeliver plus the room to retry a failing dead-letter hook.
    max_deliver: maxDeliver + DEAD_LETTER_RETRIES,
    max_ack_pending: Math.max(concurrency, options.maxAckPending ?? concurrency * 10),
    deliver_policy: options.deliverPolicy === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    ...filterConfig(options.filterSubjects),
  });
  const consumer = await retryTransient(() => jetstream(options.nc).consumers.get(stream, durable), ELECTION_RETRY_MS);

  // An ack, nak or term sent while the connection is down is buffered and then discarded by the reconnection: the
  // message would come back only when its ack wait ran out. Each waits (up to the ack wait) for the connection.
  const watch = connectionWatch(options.nc);
  const settle = async (act: () => void): Promise<void> => {
    if (!watch.connected()) await watch.whenConnected(ackWaitMs);
    act();
  };

  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let current: ConsumerMessages | undefined;
  let wake: (() => void) | undefined;
  const slotFreed = () => new Promise<void>((resolve) => (wake = resolve));

  const handle = async (msg: JsMsg): Promise<void> => {
    const deliveryCount = msg.info.deliveryCount;
    const ctx: MessageContext = {
      subject: msg.subject,
      deliveryCount,
      headers: msg.headers,
      msg,
      working: () => msg.working(),
      keepAlive: () => {
        const timer = setInterval(() => msg.working(), Math.max(1000, Math.floor(ackWaitMs / 3)));
        return () => clearInterval(timer);
      },
    };
    const log = { stream, durable, subject: msg.subject, seq: msg.info.streamSequence, deliveryCount };

    let payload: z.output<S>;
    try {
      const parsed = options.schema.safeParse(msg.json());
      if (!parsed.success) {
        logger.error({ ...log, issues: issuesOf(parsed.error) }, 'invalid event payload: terminated');
        await settle(() => msg.term());
        counted('term');
        return;
      }
      payload = parsed.data;
    } catch (error) {
      logger.error({ ...log, ...errorFields(error) }, 'event payload is not JSON: terminated');
      await settle(() => msg.term());
      counted('term');
      return;
    }

    await withExtractedContext(msg.headers, () =>
      tracer.startActiveSpan(`${msg.subject} process`, { kind: SpanKind.CONSUMER }, async (span) => {
        try {
          if (deliveryCount > maxDeliver) {
            // The handler already failed maxDeliver times; only the dead-letter hook failed after it.
            await deadLetter(payload, new Error('dead-letter hook failed earlier'), ctx);
            return;
          }
          const endTimer = metrics.duration.startTimer({ durable });
          await handleThroughOutages(payload).finally(endTimer);
          if (options.onAcked) await confirmAck(payload, ctx);
          else await settle(() => msg.ack());
          counted('ack');
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
          if (deliveryCount >= maxDeliver) {
            logger.error({ ...log, ...errorFields(error) }, 'event handler failed on its last delivery');
            await deadLetter(payload, error, ctx);
          } else {
            const delay = backoffMs[Math.min(deliveryCount - 1, backoffMs.length - 1)] ?? 0;
            logger.warn({ ...log, ...errorFields(error), retryInMs: delay }, 'event handler failed: will retry');
            await settle(() => msg.nak(delay));
            counted('nak');
          }
        } finally {
          span.end();
        }
      }),
    );

    /**
     * The handler, run again (after 0.5-2 s) while it fails only because a dependency is down, for outageRetryMs. The
     * pauses stop growing at 2 s so that the job in flight resumes within about 2 s of the dependency's return (a
     * 5 s bound left it waiting 4-5 s after an 8 s outage); a retry against a dependency that is down costs a refused
     * connection.
     */
    async function handleThroughOutages(value: z.output<S>): Promise<void> {
      const since = Date.now();
      for (let pause = 500; ; pause = Math.min(pause * 2, 2000)) {
        try {
          await options.handler(value, ctx);
          return;
        } catch (error) {
          if (stopping || !isUnavailable(error) || Date.now() - since + pause > outageRetryMs) throw error;
          logger.warn({ ...log, ...errorFields(error), retryInMs: pause }, 'a dependency is unavailable: handling again in place');
          if (watch.connected()) msg.working();
          await new Promise((r) => setTimeout(r, pause));
          if (watch.connected()) msg.working();
        }
      }
    }

    async function confirmAck(value: z.output<S>, c: MessageContext): Promise<void> {
      try {
        await natsCall(options.nc, () => msg.ackAck(), { graceMs: ackWaitMs });
      } catch (error) {
        // The handler's work is done; an unconfirmed ack only means the message may come again.
        logger.warn({ ...log, ...errorFields(error) }, 'ack not confirmed');
        return;
      }
      options.onAcked?.(value, c);
    }

    async function deadLetter(value: z.output<S>, error: unknown, c: MessageContext): Promise<void> {
      try {
        if (options.onDeadLetter) await options.onDeadLetter(value, error, c);
        else logger.error({ ...log }, 'event dropped after its last delivery (no dead-letter hook)');
        await settle(() => msg.term());
        counted('dead_letter');
      } catch (hookError) {
        logger.error({ ...log, ...errorFields(hookError) }, 'dead-letter hook failed: will retry');
        await settle(() => msg.nak(backoffMs[backoffMs.length - 1]));
        counted('nak');
      }
    }
  };

  const loop = async (): Promise<void> => {
    while (!stopping) {
      const free = concurrency - inFlight.size;
      if (free <= 0) {
        await slotFreed();
        continue;
      }
      try {
        // Ask for no more than the free slots: nothing waits in a buffer while its ack timer runs.
        current = await consumer.fetch({ max_messages: free, expires: options.fetchExpiresMs ?? 5_000 });
        for await (const msg of current) {
          const task = handle(msg)
            .catch((error: unknown) => logger.error({ stream, durable, ...errorFields(error) }, 'event handling crashed'))
            .finally(() => {
              inFlight.delete(task);
              wake?.();
            });
          inFlight.add(task);
          if (stopping) break;
        }
      } catch (error) {
        if (stopping) break;
        logger.warn({ stream, durable, ...errorFields(error) }, 'pulling messages failed: retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  };
  const running = loop();

  return {
    async stop() {
      stopping = true;
      current?.stop();
      wake?.();
      await running;
      await Promise.allSettled([...inFlight]);
    },
  };
}

function filterConfig(filter: string | string[] | undefined): Partial<ConsumerConfig> {
  const list = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  if (list.length === 0) return {};
  if (list.length === 1) return { filter_subject: list[0] };
  return { filter_subjects: list };
}

/** Creates or updates the durable, waiting out leader elections (a NATS node restarting) at start-up. */
async function ensureConsumer(nc: NatsConnection, stream: string, replaceOnFilterChange: boolean, config: Partial<ConsumerConfig>): Promise<void> {
  const jsm = await retryTransient(() => jetstreamManager(nc), ELECTION_RETRY_MS);
  await retryTransient(() => createOrUpdateConsumer(jsm, stream, config, replaceOnFilterChange), ELECTION_RETRY_MS);
}

const filtersOf = (c: Partial<ConsumerConfig>): string =>
  JSON.stringify([...(c.filter_subjects ?? []), ...(c.filter_subject ? [c.filter_subject] : [])].sort());

async function createOrUpdateConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig>, replaceOnFilterChange: boolean): Promise<void> {
  const durable = config.durable_name as string;
  let exists = await jsm.consumers.info(stream, durable).then(
    (info) => info,
    (error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    },
  );
  if (exists && replaceOnFilterChange && filtersOf(exists.config) !== filtersOf(config)) {
    await jsm.consumers.delete(stream, durable).catch((error: unknown) => {
      if (!isNotFound(error)) throw error;
    });
    exists = undefined;
  }
  if (!exists) {
    // Several replicas of a service start at once: an identical durable created by another one in the meantime is
    // no error; one created with another configuration (a rolling update) is updated below instead.
    const added = await jsm.consumers.add(stream, config).then(
      () => true,
      (error: unknown) => {
        if (!/already (in use|exists)/i.test(String(error))) throw error;
        return false;
      },
    );
    if (added) return;
  }
  // deliver_policy and the durable name cannot change on an existing consumer.
  const { durable_name: _name, deliver_policy: _policy, ...updatable } = config;
  await jsm.consumers.update(stream, durable, updatable);
}

/** A durable consumer as a service declares it to the shared start-up (`runService` workers). */
export interface ConsumerWorker {
  kind: 'consumer';
  durable: string;
  stream: string;
  subjects: string[];
  start(): Promise<Consumer>;
}

/** Declares a durable consumer: started (created or updated, then handling messages) when the service starts. */
export function consumerWorker<S extends z.ZodType>(options: ConsumeOptions<S>): ConsumerWorker {
  const filter = options.filterSubjects;
  return {
    kind: 'consumer',
    durable: options.durable,
    stream: options.stream,
    subjects: filter === undefined ? [] : Array.isArray(filter) ? filter : [filter],
    start: () => consume(options),
  };
}
