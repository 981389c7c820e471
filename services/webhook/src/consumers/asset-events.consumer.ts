import { z } from 'zod';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  ASSET_EVENT_SCHEMAS,
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  assetEventTypeOf,
  consumerWorker,
  type AssetEventType,
  type ConsumerWorker,
} from '@dam/events';
import type { Logger } from '@dam/logging';
import type { DeliveryStore, SettingsSource } from '../domain/ports';

export const DELIVERIES_DURABLE = 'webhook-deliveries';

/** Any asset event: the payload is delivered as it is (the specification's tables), its creator kept for reissues. */
const envelope = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
  time: z.string().min(1),
  group_id: z.string().regex(/^\d+$/),
  asset_id: z.string().min(1),
  data: z.looseObject({ creator_id: z.number().int().optional() }),
});

/**
 * The payload as the specification's tables define it, its members in their order (Get Data's): the stream's copy
 * went through PostgreSQL's jsonb in the outbox, which reorders keys. Unknown to the schema: sent as it came.
 */
function payloadOf(type: AssetEventType, data: unknown): string {
  const parsed = ASSET_EVENT_SCHEMAS[type].shape.data.safeParse(data);
  return JSON.stringify(parsed.success ? parsed.data : data);
}

export interface AssetEventsDeps {
  repo: Pick<DeliveryStore, 'recordEvent'>;
  settings: SettingsSource;
  /**
   * A new delivery is due: called once the event's ack is confirmed, so that the consumer's ack floor, which
   * gates what the dispatcher may send (every earlier event recorded first), already includes it.
   */
  wake: () => void;
  logger: Logger;
}

/**
 * Every asset event of every group: kept in the event log, and one delivery opened per URL of the group's settings
 * (read when the event arrives). Settings that cannot be read fail the message, so NATS redelivers it.
 *
 * Events are recorded several at once (and by every replica sharing the durable), so one asset's file-processed
 * may be recorded before its file-saved; the dispatcher sends only what lies at or below the durable's ack floor
 * (`ackFloorOf`), where every earlier event has been recorded.
 */
export function assetEventsWorker(nc: NatsConnection, deps: AssetEventsDeps): ConsumerWorker {
  const openedSeqs = new Set<number>();
  return consumerWorker({
    nc,
    stream: ASSET_EVENTS,
    durable: DELIVERIES_DURABLE,
    filterSubjects: ASSET_EVENTS_SUBJECTS,
    schema: envelope,
    deliverPolicy: 'new',
    concurrency: 8,
    handler: async (e, ctx) => {
      const type = assetEventTypeOf(ctx.subject);
      if (!type) return;
      const groupId = Number(e.group_id);
      const { urls } = await deps.settings(groupId);
      const opened = await deps.repo.recordEvent(
        {
          id: e.id,
          groupId,
          assetId: e.asset_id,
          type: e.type,
          time: e.time,
          seq: ctx.msg.info.streamSequence,
          ...(e.data.creator_id !== undefined ? { creatorId: e.data.creator_id } : {}),
          body: payloadOf(type, e.data),
        },
        urls,
      );
      if (opened > 0) openedSeqs.add(ctx.msg.info.streamSequence);
    },
    onAcked: (_e, ctx) => {
      if (openedSeqs.delete(ctx.msg.info.streamSequence)) deps.wake();
    },
    logger: deps.logger,
  });
}

/**
 * The stream sequence below which every asset event has been recorded: the durable's ack floor (an event is acked
 * only once its deliveries are in the database, and the floor moves only over acked events).
 */
export async function ackFloorOf(jsm: JetStreamManager): Promise<number> {
  const info = await jsm.consumers.info(ASSET_EVENTS, DELIVERIES_DURABLE);
  return info.ack_floor.stream_seq;
}
