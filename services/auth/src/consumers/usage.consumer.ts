import type { NatsConnection } from '@nats-io/nats-core';
import { consumerWorker, DAM_INTERNAL, SUBJECT_USAGE_PREFIX, usageMetricOf, usageRecordSchema, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { UsageStore } from '../domain/ports';

export const USAGE_DURABLE = 'auth-usage';

/**
 * Every usage record of every service (`dam.internal.usage.*`), each counted once. A metric's subject may be published
 * only by the service that counts it, so a record counts only under its subject's metric: the gateway cannot write
 * cdn_bytes (or storage) by naming them in an api_requests record.
 */
export function usageWorker(nc: NatsConnection, usage: UsageStore, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: DAM_INTERNAL,
    durable: USAGE_DURABLE,
    filterSubjects: `${SUBJECT_USAGE_PREFIX}.>`,
    schema: usageRecordSchema,
    deliverPolicy: 'all',
    concurrency: 4,
    handler: async (record, ctx) => {
      if (usageMetricOf(ctx.subject) !== record.metric) {
        logger.warn({ subject: ctx.subject, metric: record.metric, id: record.id }, 'usage record of another metric than its subject: dropped');
        return;
      }
      await usage.record(record);
    },
    logger,
  });
}
