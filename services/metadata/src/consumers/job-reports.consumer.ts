import { consume, DAM_INTERNAL, JOB_REPORTS, jobReportWorkerOf, type ConsumeOptions, type Consumer, type JobReport, type MessageContext } from '@dam/events';
import { startPoller, type Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import { applyJobReport, failUnappliedReport, type ReportDeps } from '../use-cases/apply-job-report.use-case';
import type { JobTimings } from '../domain/job';
import type { RunInTransaction } from '../domain/ports';
import { sweepJobLeases } from '../use-cases/sweep-job-leases.use-case';

type NatsConnection = ConsumeOptions<typeof JOB_REPORTS.schema>['nc'];

export const JOB_REPORTS_DURABLE = 'metadata-job-reports';

export function jobReportHandler(runInTransaction: RunInTransaction, logger: Logger, deps: ReportDeps = {}) {
  return async (report: JobReport, ctx: Pick<MessageContext, 'subject'>): Promise<void> => {
    // Who published it: each worker kind's identity may publish on its own report subject only.
    const from = jobReportWorkerOf(ctx.subject);
    if (!from) {
      logger.warn({ message_id: report.id, job_id: report.job_id, subject: ctx.subject }, 'job report on a subject of no worker kind: dropped');
      return;
    }
    const outcome = await applyJobReport(runInTransaction, report, from, deps);
    const fields = { message_id: report.id, job_id: report.job_id, asset_id: report.asset_id, state: report.state, from, outcome };
    if (outcome === 'foreign-object-key') logger.error(fields, 'job report names objects outside the asset: rejected');
    else if (outcome === 'wrong-worker') logger.warn(fields, "job report from a worker of another kind than the job's: dropped");
    else if (outcome === 'renewed') logger.debug(fields, 'job lease renewed');
    else logger.info(fields, 'job report applied');
  };
}

/**
 * Durable pull consumer of every worker kind's job reports, `dam.internal.jobs.reports.<worker>` (validation, term of
 * invalid payloads and retries in @dam/events). Upgrading from the single report subject replaces the durable (a
 * filter update leaves it delivering nothing on nats-server 2.9); a report an old worker published on the bare subject
 * is not read, and its job is handed out again by the lease sweep.
 */
export function consumeJobReports(
  nc: NatsConnection,
  runInTransaction: RunInTransaction,
  logger: Logger,
  concurrency: number,
  deps: ReportDeps = {},
): Promise<Consumer> {
  return consume({
    nc,
    stream: DAM_INTERNAL,
    durable: JOB_REPORTS_DURABLE,
    filterSubjects: JOB_REPORTS.subject,
    replaceOnFilterChange: true,
    schema: JOB_REPORTS.schema,
    handler: jobReportHandler(runInTransaction, logger, deps),
    logger,
    concurrency,
    // Never a silent drop (ARCHITECTURE rule 5): the job and its asset end in ERROR.
    onDeadLetter: async (report, error, ctx) => {
      const from = jobReportWorkerOf(ctx.subject);
      const marked = from ? await failUnappliedReport(runInTransaction, report, from) : false;
      logger.error({ err: error, message_id: report.id, job_id: report.job_id, asset_id: report.asset_id, marked }, 'job report dead-lettered');
    },
  });
}

/** The consumer as metadata declares it to the shared start-up (one durable, one subject). */
export function jobReportsWorker(nc: NatsConnection, runInTransaction: RunInTransaction, logger: Logger, concurrency: number, deps: ReportDeps = {}): Worker {
  return {
    kind: 'consumer',
    durable: JOB_REPORTS_DURABLE,
    stream: DAM_INTERNAL,
    subjects: [JOB_REPORTS.subject],
    start: () => consumeJobReports(nc, runInTransaction, logger, concurrency, deps),
  };
}

/** The lease sweep as a poller: jobs whose worker went quiet are handed out again, or end in ERROR. */
export function jobLeaseSweeper(runInTransaction: RunInTransaction, timings: JobTimings, logger: Logger, intervalMs: number): Worker {
  return {
    kind: 'poller',
    name: 'job-leases',
    start: () => startPoller({ name: 'job-leases', intervalMs, logger, run: () => sweepJobLeases(runInTransaction, timings, logger) }),
  };
}
