import { consume, DAM_INTERNAL, JOB_REPORTS, type ConsumeOptions, type Consumer, type JobReport } from '@dam/events';
import { startPoller, type Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import { applyJobReport, failUnappliedReport, type ReportDeps } from '../domain/apply-job-report.use-case';
import type { JobTimings } from '../domain/job';
import type { RunInTransaction } from '../domain/ports';
import { sweepJobLeases } from '../domain/sweep-job-leases.use-case';

type NatsConnection = ConsumeOptions<typeof JOB_REPORTS.schema>['nc'];

export const JOB_REPORTS_DURABLE = 'metadata-job-reports';

export function jobReportHandler(runInTransaction: RunInTransaction, logger: Logger, deps: ReportDeps = {}) {
  return async (report: JobReport): Promise<void> => {
    const outcome = await applyJobReport(runInTransaction, report, deps);
    const fields = { message_id: report.id, job_id: report.job_id, asset_id: report.asset_id, state: report.state, outcome };
    if (outcome === 'foreign-object-key') logger.error(fields, 'job report names objects outside the asset: rejected');
    else if (outcome === 'renewed') logger.debug(fields, 'job lease renewed');
    else logger.info(fields, 'job report applied');
  };
}

/** Durable pull consumer of every worker's job reports (validation, term of invalid payloads and retries in @dam/events). */
export function consumeJobReports(nc: NatsConnection, runInTransaction: RunInTransaction, logger: Logger, concurrency: number, deps: ReportDeps = {}): Promise<Consumer> {
  return consume({
    nc,
    stream: DAM_INTERNAL,
    durable: JOB_REPORTS_DURABLE,
    filterSubjects: JOB_REPORTS.subject,
    schema: JOB_REPORTS.schema,
    handler: jobReportHandler(runInTransaction, logger, deps),
    logger,
    concurrency,
    // Never a silent drop (ARCHITECTURE rule 5): the job and its asset end in ERROR.
    onDeadLetter: async (report, error) => {
      const marked = await failUnappliedReport(runInTransaction, report);
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
