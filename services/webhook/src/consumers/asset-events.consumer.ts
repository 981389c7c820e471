import { z } from 'zod';
import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, assetEventTypeOf, consumerWorker, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { DeliveryRepository } from '../adapters/delivery.repository';
import type { WebhookSettings } from '../domain/delivery';

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

export interface AssetEventsDeps {
  repo: DeliveryRepository;
  settings: (groupId: number) => Promise<WebhookSettings>;
  /** A new delivery is due now. */
  wake: () => void;
  logger: Logger;
}

/**
 * Every asset event of every group: kept in the event log, and one delivery opened per URL of the group's settings
 * (read when the event arrives). Settings that cannot be read fail the message, so NATS redelivers it.
 */
export function assetEventsWorker(nc: NatsConnection, deps: AssetEventsDeps): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: ASSET_EVENTS,
    durable: DELIVERIES_DURABLE,
    filterSubjects: ASSET_EVENTS_SUBJECTS,
    schema: envelope,
    deliverPolicy: 'new',
    concurrency: 8,
    handler: async (e, ctx) => {
      if (!assetEventTypeOf(ctx.subject)) return;
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
          body: JSON.stringify(e.data),
        },
        urls,
      );
      if (opened > 0) deps.wake();
    },
    logger: deps.logger,
  });
}
