import type { NatsConnection } from '@nats-io/nats-core';
import { consumerWorker, DAM_INTERNAL, SUBJECT_USAGE_PREFIX, usageRecordSchema, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { UsageRepository } from '../adapters/usage.repository';

export const USAGE_DURABLE = 'auth-usage';

/** Every usage record of every service (`dam.internal.usage.*`), each counted once. */
export function usageWorker(nc: NatsConnection, usage: UsageRepository, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: DAM_INTERNAL,
    durable: USAGE_DURABLE,
    filterSubjects: `${SUBJECT_USAGE_PREFIX}.>`,
    schema: usageRecordSchema,
    deliverPolicy: 'all',
    concurrency: 4,
    handler: async (record) => {
      await usage.record(record);
    },
    logger,
  });
}
