import {
  CONVERSIONS_COMPLETED,
  DAM_INTERNAL,
  consume,
  type ConsumeOptions,
  type Consumer,
  type ConversionsCompleted,
} from '@dam/events';
import type { Logger } from '@dam/logging';
import type { RunInTransaction } from '../domain/ports';
import { failUnappliedReport, recordConversions } from '../domain/record-conversions.use-case';
import type { Worker } from '@dam/http';

type NatsConnection = ConsumeOptions<typeof CONVERSIONS_COMPLETED.schema>['nc'];

export const CONVERSIONS_DURABLE = 'metadata-conversions';

export function conversionsCompletedHandler(runInTransaction: RunInTransaction, logger: Logger) {
  return async (report: ConversionsCompleted): Promise<void> => {
    const outcome = await recordConversions(runInTransaction, report);
    const fields = { message_id: report.id, asset_id: report.asset_id, group_id: report.group_id, outcome };
    if (outcome === 'foreign-object-key') logger.error(fields, 'conversion report names objects outside the asset: rejected');
    else logger.info(fields, 'conversion report applied');
  };
}

/** Durable pull consumer of conversion reports (validation, term of invalid payloads and retries in @dam/events). */
export function consumeConversionsCompleted(
  nc: NatsConnection,
  runInTransaction: RunInTransaction,
  logger: Logger,
  concurrency: number,
): Promise<Consumer> {
  return consume({
    nc,
    stream: DAM_INTERNAL,
    durable: CONVERSIONS_DURABLE,
    filterSubjects: CONVERSIONS_COMPLETED.subject,
    schema: CONVERSIONS_COMPLETED.schema,
    handler: conversionsCompletedHandler(runInTransaction, logger),
    logger,
    concurrency,
    // Never a silent drop (ARCHITECTURE rule 5): the asset ends in ERROR.
    onDeadLetter: async (report, error) => {
      const marked = await failUnappliedReport(runInTransaction, report);
      logger.error({ err: error, message_id: report.id, asset_id: report.asset_id, marked }, 'conversion report dead-lettered');
    },
  });
}

/** The consumer as metadata declares it to the shared start-up (one durable, one subject). */
export function conversionsCompletedWorker(nc: NatsConnection, runInTransaction: RunInTransaction, logger: Logger, concurrency: number): Worker {
  return {
    kind: 'consumer',
    durable: CONVERSIONS_DURABLE,
    stream: DAM_INTERNAL,
    subjects: [CONVERSIONS_COMPLETED.subject],
    start: () => consumeConversionsCompleted(nc, runInTransaction, logger, concurrency),
  };
}
