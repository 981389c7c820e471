import type { NatsConnection } from '@nats-io/nats-core';
import { consumerWorker, DAM_INTERNAL, noticeKindOf, NOTICES_FILTER, noticeSchema, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { AuthStore } from '../domain/ports';
import { recordNotice } from '../use-cases/record-notice.use-case';

export const NOTICES_DURABLE = 'auth-notices';

/**
 * The notices of other services (`dam.internal.notices.*`) for Login's notifications, each recorded once. A notice
 * kind's subject may be published only by the service that records it, so a notice counts only under its own
 * subject: webhook cannot tell a user that a job failed.
 */
export function noticesWorker(nc: NatsConnection, store: AuthStore, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: DAM_INTERNAL,
    durable: NOTICES_DURABLE,
    filterSubjects: NOTICES_FILTER,
    schema: noticeSchema,
    deliverPolicy: 'all',
    concurrency: 2,
    handler: async (notice, ctx) => {
      if (noticeKindOf(ctx.subject) !== notice.kind) {
        logger.warn({ subject: ctx.subject, kind: notice.kind, id: notice.id }, 'notice of another kind than its subject: dropped');
        return;
      }
      await recordNotice(store, notice);
    },
    logger,
  });
}
