import type { JetStreamClient } from '@nats-io/jetstream';
import { jobCommandWorker, publishEvent, startJobReporter, usageOf, workerId, type ConversionsCompleted, type JobCommand, type JobConsumerOptions, type MessageContext, type ReportPacing } from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import { ToolFailedError, ToolStalledError, UnprocessableVideoError } from '@dam/media';
import { transcodeAsset, transcodeReportId, TRANSCODE_STEPS, type TranscodeDeps, type TranscodeInput } from '../use-cases/transcode-asset.use-case';

export const JOBS_DURABLE = 'transcode-jobs';

/** This process as a lease holder. */
export const WORKER_ID = workerId('transcode');

export interface TranscodeConsumerDeps extends TranscodeDeps {
  js: JetStreamClient;
  logger: Logger;
  /** How its reports about a job are paced (JOB_HEARTBEAT_MS, JOB_PROGRESS_INTERVAL_MS, JOB_START_REPORT_DELAY_MS). */
  pacing: ReportPacing;
}

const inputOf = (command: JobCommand): TranscodeInput => ({
  jobId: command.job_id,
  groupId: command.group_id,
  assetId: command.asset_id,
  checksum: command.source_checksum,
  ...(command.source_key ? { sourceKey: command.source_key } : {}),
  ...(command.keys ? { keys: command.keys } : {}),
});

/** A report that the original itself failed (`errors.original`): the asset turns ERROR with the tool's reason. */
const failure = (command: JobCommand, message: string): ConversionsCompleted => ({
  id: transcodeReportId(command.asset_id, command.source_checksum),
  asset_id: command.asset_id,
  group_id: command.group_id,
  source_checksum: command.source_checksum,
  image: null,
  conversions: {},
  errors: { original: message },
});

const reporterFor = (deps: TranscodeConsumerDeps, command: JobCommand) =>
  startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: TRANSCODE_STEPS.preprocess, pacing: deps.pacing, logger: deps.logger });

/**
 * Runs one transcode job. A file ffprobe cannot read, or that ffmpeg refuses, is reported FAILED at once with
 * the tool's reason (retrying cannot fix it); anything else (storage, settings) throws and is retried.
 */
export function handleTranscodeCommand(deps: TranscodeConsumerDeps) {
  return async (command: JobCommand, ctx: MessageContext): Promise<void> => {
    const log = { job_id: command.job_id, asset_id: command.asset_id, group_id: command.group_id, attempt: command.attempt, delivery: ctx.deliveryCount };
    const reporter = reporterFor(deps, command);
    const stopKeepAlive = ctx.keepAlive();
    const started = Date.now();
    deps.logger.info(log, 'transcode started');
    let result: ConversionsCompleted;
    try {
      result = await transcodeAsset(inputOf(command), deps, {
        step: (name) => {
          ctx.working();
          reporter.step(TRANSCODE_STEPS[name]);
        },
        progress: (fraction) => reporter.progress(Math.round(fraction * 1000), 1000),
      });
    } catch (error) {
      // A tool killed by a signal (memory, a stop) may well succeed next time; an exit with an error will not.
      const permanent =
        error instanceof UnprocessableVideoError || error instanceof ToolStalledError || (error instanceof ToolFailedError && error.signal === null);
      if (!permanent) throw error;
      deps.logger.warn({ ...log, err: { message: error.message } }, 'original is not a usable video');
      result = failure(command, error.message);
    } finally {
      reporter.stop();
      stopKeepAlive();
    }
    const failed = Object.keys(result.conversions).length === 0 && Object.keys(result.errors).length > 0;
    await reporter.finish(failed ? 'FAILED' : 'COMPLETED', failed ? { conversions: result, error: describe(result.errors) } : { conversions: result });
    await countTranscodeSeconds(deps, command, result, new Date(started)).catch((error: unknown) => deps.logger.warn({ ...log, err: error }, 'transcode usage not published'));
    deps.logger.info({ ...log, outputs: Object.keys(result.conversions), errors: result.errors, skipped: result.skipped, ms: Date.now() - started }, 'transcode finished');
  };
}

/**
 * Usage statistics (CONTRACT §9): a job that made outputs counts the source's duration in seconds against the user
 * it was made for, once per job (the record id is the job's: a job run twice is counted once).
 */
async function countTranscodeSeconds(deps: TranscodeConsumerDeps, command: JobCommand, result: ConversionsCompleted, started: Date): Promise<void> {
  const duration = Number(result.metadata?.duration);
  if (!command.created_by || Object.keys(result.conversions).length === 0 || !Number.isFinite(duration) || duration <= 0) return;
  const usage = usageOf('transcode_seconds');
  const record = {
    id: `transcode_seconds-job-${command.job_id}`,
    metric: 'transcode_seconds' as const,
    group_id: command.group_id,
    user_id: command.created_by,
    value: duration,
    start: started.toISOString(),
    end: new Date().toISOString(),
  };
  await publishEvent(deps.js, usage.subject, usage.schema, record, { msgId: record.id });
}

const describe = (errors: Record<string, string>): string =>
  Object.entries(errors)
    .map(([key, why]) => `${key}: ${why}`)
    .join('; ');

/** After the last delivery failed: the job ends FAILED, so the asset ends in ERROR instead of NOT_READY. */
export function deadLetterTranscodeCommand(deps: TranscodeConsumerDeps) {
  return async (command: JobCommand, error: unknown): Promise<void> => {
    const result = failure(command, `transcode failed after every retry: ${error instanceof Error ? error.message : String(error)}`);
    await reporterFor(deps, command).finish('FAILED', { conversions: result, error: describe(result.errors) });
    deps.logger.error({ job_id: command.job_id, asset_id: command.asset_id, group_id: command.group_id }, 'transcode given up: error reported');
  };
}

/** The consumer as transcode declares it to the shared start-up. */
export function transcodeJobWorker(nc: Parameters<typeof jobCommandWorker>[0]['nc'], deps: TranscodeConsumerDeps, options: JobConsumerOptions): Worker {
  return jobCommandWorker({ nc, worker: 'transcode', durable: JOBS_DURABLE, handler: handleTranscodeCommand(deps), onDeadLetter: deadLetterTranscodeCommand(deps), logger: deps.logger, ...options });
}
