import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  consumerWorker,
  DAM_INTERNAL,
  errorFields,
  jobCommand,
  type ConsumerWorker,
  type EventLogger,
  type JobCommand,
  type JobWorker,
  type MessageContext,
} from '@dam/events';
import type { JobEnd, ReportExtra } from './contract';
import { reportPacingOf, startJobReporter, workerId, type ReportPacing } from './reporter';

/** One job as its handler sees it: the command, and what it tells metadata while it works. */
export interface JobRun {
  command: JobCommand;
  /** The delivery (1 on the first), the message (a deferral naks it) and the ack timer. */
  ctx: MessageContext;
  /** Progress of the work (also tells the server the message is being worked on). */
  progress(done: number, total: number): void;
  /** The job moved on to another of its steps (also tells the server the message is being worked on). */
  step(name: string): void;
  /** The job's fields for log lines. */
  log: { job_id: number; asset_id: string; group_id: string; attempt: number; delivery: number };
}

/**
 * A worker kind as it declares itself: what it does with one job, and nothing of the plumbing. The runtime
 * (jobWorker) takes its commands from its durable, paces its reports (STARTED, PROGRESS, the lease), keeps the
 * message alive while it works, sends the final report the handler's end names, and once every delivery failed,
 * ends the job FAILED, so the asset never waits for the lease sweep.
 */
export interface JobHandler {
  worker: JobWorker;
  durable: string;
  /** The step a job starts in (a transcode moves on through its steps with `run.step`). */
  firstStep: (command: JobCommand) => string;
  /**
   * Runs one job and says how it ended: a failure retrying cannot mend (a broken file, a refused source) is a FAILED
   * end with its reason. Throws for what another delivery may mend (a dependency down): the command comes back.
   */
  run(run: JobRun): Promise<JobEnd>;
  /** What the work is called in the report once every delivery failed: "<noun> failed after every retry: <why>". */
  noun: string;
  /** That report's content (default: the error alone); conversion and transcode name the original as what failed. */
  givenUp?(command: JobCommand, why: string): ReportExtra;
  /** After the final report went out (usage records, metrics, the log line): a failure is logged, never retried. */
  after?(run: JobRun, end: Exclude<JobEnd, { state: 'DEFERRED' }>, startedAt: Date): Promise<void> | void;
}

/** How one worker kind takes its job commands: at once, ack wait, deliveries and the backoff between them. */
export interface JobConsumerOptions {
  concurrency: number;
  ackWaitMs: number;
  maxDeliver: number;
  backoffMs?: number[];
  /** How long a failure only because a dependency is down is retried in place (consume()'s outageRetryMs). */
  outageRetryMs?: number;
}

/** What the runtime needs besides the handler: the connection, how reports are paced, the log. */
export interface JobRuntime extends JobConsumerOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  pacing: ReportPacing;
  logger: EventLogger;
}

/** A worker's settings as jobWorkerEnv of @dam/config parses them. */
export interface JobWorkerConfig {
  ACK_WAIT_MS: number;
  MAX_DELIVER: number;
  RETRY_BACKOFF_MS: number[];
  OUTAGE_RETRY_MS: number;
  JOB_HEARTBEAT_MS: number;
  JOB_PROGRESS_INTERVAL_MS: number;
  JOB_START_REPORT_DELAY_MS: number;
}

/** The runtime of a worker kind from its configuration; `options` sets its concurrency and overrides the rest. */
export function jobRuntime(
  nc: NatsConnection,
  config: JobWorkerConfig,
  logger: EventLogger,
  options: Partial<JobConsumerOptions> & { concurrency: number },
): JobRuntime {
  return {
    nc,
    js: jetstream(nc),
    pacing: reportPacingOf(config),
    logger,
    ackWaitMs: config.ACK_WAIT_MS,
    maxDeliver: config.MAX_DELIVER,
    backoffMs: config.RETRY_BACKOFF_MS,
    outageRetryMs: config.OUTAGE_RETRY_MS,
    ...options,
  };
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * A declared worker kind as a durable consumer of its job commands (`dam.internal.jobs.run.<worker>` on
 * DAM_INTERNAL), in the form the shared start-up (`runService` of @dam/http) takes workers.
 */
export function jobWorker(handler: JobHandler, runtime: JobRuntime): ConsumerWorker {
  const { js, pacing, logger } = runtime;
  const holder = workerId(handler.worker);
  const reporterOf = (command: JobCommand) => startJobReporter({ js, command, worker: holder, step: handler.firstStep(command), pacing, logger });
  const logOf = (command: JobCommand, delivery: number): JobRun['log'] => ({
    job_id: command.job_id,
    asset_id: command.asset_id,
    group_id: command.group_id,
    attempt: command.attempt,
    delivery,
  });

  const handle = async (command: JobCommand, ctx: MessageContext): Promise<void> => {
    const startedAt = new Date();
    const reporter = reporterOf(command);
    const stopKeepAlive = ctx.keepAlive();
    const run: JobRun = {
      command,
      ctx,
      log: logOf(command, ctx.deliveryCount),
      progress: (done, total) => {
        ctx.working();
        reporter.progress(done, total);
      },
      step: (name) => {
        ctx.working();
        reporter.step(name);
      },
    };
    let end: JobEnd;
    try {
      end = await handler.run(run);
    } finally {
      reporter.stop();
      stopKeepAlive();
    }
    if (end.state === 'DEFERRED') return;
    await reporter.finish(end.state, end.report);
    if (!handler.after) return;
    try {
      await handler.after(run, end, startedAt);
    } catch (error) {
      logger.warn({ ...run.log, ...errorFields(error) }, `${handler.worker} job: the work after its report failed`);
    }
  };

  const onDeadLetter = async (command: JobCommand, error: unknown): Promise<void> => {
    const why = `${handler.noun} failed after every retry: ${messageOf(error)}`;
    await reporterOf(command).finish('FAILED', handler.givenUp ? handler.givenUp(command, why) : { error: why });
    logger.error({ ...logOf(command, 0), reason: why }, `${handler.worker} job given up: FAILED reported`);
  };

  const commands = jobCommand(handler.worker);
  return consumerWorker({
    nc: runtime.nc,
    stream: DAM_INTERNAL,
    durable: handler.durable,
    filterSubjects: commands.subject,
    schema: commands.schema,
    handler: handle,
    onDeadLetter,
    logger,
    concurrency: runtime.concurrency,
    ackWaitMs: runtime.ackWaitMs,
    maxDeliver: runtime.maxDeliver,
    ...(runtime.backoffMs ? { backoffMs: runtime.backoffMs } : {}),
    ...(runtime.outageRetryMs === undefined ? {} : { outageRetryMs: runtime.outageRetryMs }),
  });
}
