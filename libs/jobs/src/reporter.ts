import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { JetStreamClient } from '@nats-io/jetstream';
import { connectionOf, errorFields, jobReport, natsCall, publishEvent, workerKindOf, type EventLogger, type JobCommand, type JobReport } from '@dam/events';

/** A worker process as a lease holder (`<kind>@<host>:<pid>`). */
export const workerId = (kind: string): string => `${kind}@${hostname()}:${process.pid}`;

/**
 * How long a finished job's final report waits for NATS to come back (and rides out leader elections): the work is
 * done, so it is reported when NATS returns instead of being thrown away and done again.
 */
export const FINAL_REPORT_WAIT_MS = 2 * 60_000;

/** The final report's id: one per job, so a re-run after a crash that publishes it again is stored once. */
export const resultReportId = (jobId: number): string => `job-${jobId}-done`;

export interface JobReporter {
  /** Progress 0-99 of the work (sent when it grows); also renews the lease. */
  progress(done: number, total: number): void;
  /** The job moved on to another of its steps (a transcode: preprocess, transcodes, addons, postprocess). */
  step(name: string): void;
  /** The final report (COMPLETED or FAILED); stops the heartbeat. */
  finish(state: 'COMPLETED' | 'FAILED', extra?: Partial<JobReport>): Promise<void>;
  stop(): void;
}

/**
 * How a worker paces its reports about one job: at least every `heartbeatMs` (the lease), progress at most every
 * `progressIntervalMs`, and the start once the job has run `startDelayMs` (0: at once).
 */
export interface ReportPacing {
  heartbeatMs: number;
  progressIntervalMs: number;
  startDelayMs: number;
}

/** A job worker's pacing from its configuration (jobWorkerEnv of @dam/config). */
export const reportPacingOf = (config: { JOB_HEARTBEAT_MS: number; JOB_PROGRESS_INTERVAL_MS: number; JOB_START_REPORT_DELAY_MS: number }): ReportPacing => ({
  heartbeatMs: config.JOB_HEARTBEAT_MS,
  progressIntervalMs: config.JOB_PROGRESS_INTERVAL_MS,
  startDelayMs: config.JOB_START_REPORT_DELAY_MS,
});

/**
 * How a worker talks about one job to metadata (`dam.internal.jobs.reports.<worker>`, the kind of the `worker` id, the
 * only report subject its identity may publish): STARTED once the job has run
 * `startDelayMs`, PROGRESS when the step changes, when progress grows (at most every `progressIntervalMs`, the latest
 * value sent at the end of the interval, so a job done sooner costs metadata two reports, not one per output) and at
 * least every `heartbeatMs` (the lease), then one final report with a fixed id; each says when the work started.
 * A job done within `startDelayMs` sends its final report only: one NATS message and one metadata transaction
 * fewer, and none of that work runs beside the job's own (an addon's model ran ~5 % slower with it, on two cores).
 * Until then the job shows QUEUED, as while its command waits; what changed meanwhile goes with the STARTED report.
 * A lost heartbeat only costs a lease renewal, never the job.
 */
export function startJobReporter(opts: {
  js: JetStreamClient;
  command: JobCommand;
  worker: string;
  step: string;
  pacing: ReportPacing;
  logger: EventLogger;
}): JobReporter {
  const { command, pacing } = opts;
  const kind = workerKindOf(opts.worker);
  if (!kind) throw new Error(`job reporter: "${opts.worker}" names no worker kind (workerId(<kind>))`);
  const reports = jobReport(kind);
  const startedAt = new Date().toISOString();
  let progress = 0;
  let step = opts.step;
  const report = (state: JobReport['state'], extra: Partial<JobReport> = {}): JobReport => ({
    id: state === 'COMPLETED' || state === 'FAILED' ? resultReportId(command.job_id) : randomUUID(),
    job_id: command.job_id,
    attempt: command.attempt,
    group_id: command.group_id,
    asset_id: command.asset_id,
    worker: opts.worker,
    state,
    step,
    progress: state === 'COMPLETED' || state === 'FAILED' ? 100 : progress,
    started_at: startedAt,
    ...extra,
  });
  const nc = connectionOf(opts.js);
  /** Once `waitMs` allows (a heartbeat: now or never; the final report: through an outage), repeatable by its id. */
  const publish = (r: JobReport, waitMs: number) => {
    const send = () => publishEvent(opts.js, reports.subject, reports.schema, r, { msgId: r.id });
    return nc ? natsCall(nc, send, { graceMs: waitMs, retryMs: waitMs }) : send();
  };
  /** When the last report went out; 0 while metadata has not been told (until then changes wait for STARTED). */
  let sentAt = 0;
  let trailing: NodeJS.Timeout | undefined;
  let starting: NodeJS.Timeout | undefined;
  const clearPending = () => {
    clearTimeout(trailing);
    clearTimeout(starting);
    trailing = undefined;
    starting = undefined;
  };
  const beat = () => {
    clearPending();
    const state = sentAt === 0 ? 'STARTED' : 'PROGRESS';
    sentAt = Date.now();
    void publish(report(state), 0).catch((error: unknown) => opts.logger.warn({ job_id: command.job_id, ...errorFields(error) }, 'job heartbeat not sent'));
  };
  /** A change to tell: now, or at the end of the interval since the last report (with the state then). */
  const changed = () => {
    if (sentAt === 0) return; // the STARTED report will carry it
    const wait = sentAt + pacing.progressIntervalMs - Date.now();
    if (wait <= 0) beat();
    else if (!trailing) {
      trailing = setTimeout(beat, wait);
      trailing.unref();
    }
  };
  const stop = () => {
    clearInterval(timer);
    clearPending();
  };
  if (pacing.startDelayMs > 0) {
    starting = setTimeout(beat, pacing.startDelayMs);
    starting.unref();
  } else beat();
  const timer = setInterval(beat, pacing.heartbeatMs);
  timer.unref();
  return {
    progress(done, total) {
      const next = Math.min(99, Math.floor((100 * done) / Math.max(1, total)));
      if (next <= progress) return;
      progress = next;
      changed();
    },
    step(name) {
      if (name === step) return;
      step = name;
      if (sentAt !== 0) beat();
    },
    async finish(state, extra = {}) {
      stop();
      await publish(report(state, extra), FINAL_REPORT_WAIT_MS);
    },
    stop,
  };
}
