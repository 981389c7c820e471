import type { JetStreamClient } from '@nats-io/jetstream';
import { publishEvent, usageOf, type JobCommand, type JobOutputs } from '@dam/events';
import type { Worker } from '@dam/http';
import { endOfOutputs, jobWorker, originalFailed, TRANSCODE_STEPS, type JobHandler, type JobRuntime } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import { ToolFailedError, ToolStalledError, UnprocessableVideoError } from '@dam/media';
import { transcodeAsset, type TranscodeDeps, type TranscodeInput } from '../use-cases/transcode-asset.use-case';

export const JOBS_DURABLE = 'transcode-jobs';

export interface TranscodeConsumerDeps extends TranscodeDeps {
  /** Where usage records go (transcode_seconds). */
  js: JetStreamClient;
  logger: Logger;
}

const inputOf = (command: JobCommand): TranscodeInput => ({
  jobId: command.job_id,
  groupId: command.group_id,
  assetId: command.asset_id,
  checksum: command.source_checksum,
  ...(command.source_key ? { sourceKey: command.source_key } : {}),
  ...(command.keys ? { keys: command.keys } : {}),
  ...(command.settings ? { settings: command.settings } : {}),
});

/** A report that the original itself failed (`errors.original`): the asset turns ERROR with the tool's reason. */
const failure = (command: JobCommand, message: string): JobOutputs => originalFailed({ source_checksum: command.source_checksum }, message);

/**
 * The transcode worker: one video's renditions, HLS, previews and storyboard, step by step. A file ffprobe cannot
 * read, or that ffmpeg refuses, ends the job FAILED at once with the tool's reason (retrying cannot fix it); anything
 * else (storage, settings) throws and is retried.
 */
export function transcodeJobs(deps: TranscodeConsumerDeps): JobHandler {
  return {
    worker: 'transcode',
    durable: JOBS_DURABLE,
    firstStep: () => TRANSCODE_STEPS[0],
    noun: 'transcode',
    givenUp: (command, why) => endOfOutputs(failure(command, why)).report,
    async run({ command, log, step, progress }) {
      const started = Date.now();
      deps.logger.info(log, 'transcode started');
      let result: JobOutputs;
      try {
        result = await transcodeAsset(inputOf(command), deps, { step, progress: (fraction) => progress(Math.round(fraction * 1000), 1000) });
      } catch (error) {
        // A tool killed by a signal (memory, a stop) may well succeed next time; an exit with an error will not.
        const permanent =
          error instanceof UnprocessableVideoError || error instanceof ToolStalledError || (error instanceof ToolFailedError && error.signal === null);
        if (!permanent) throw error;
        deps.logger.warn({ ...log, err: { message: error.message } }, 'original is not a usable video');
        result = failure(command, error.message);
      }
      deps.logger.info(
        { ...log, outputs: Object.keys(result.conversions), errors: result.errors, skipped: result.skipped, ms: Date.now() - started },
        'transcode finished',
      );
      return endOfOutputs(result);
    },
    after: ({ command }, end, startedAt) => countTranscodeSeconds(deps, command, end.report?.outputs, startedAt),
  };
}

/**
 * Usage statistics (CONTRACT §9): a job that made outputs counts the source's duration in seconds against the user
 * it was made for, once per job (the record id is the job's: a job run twice is counted once).
 */
async function countTranscodeSeconds(deps: TranscodeConsumerDeps, command: JobCommand, result: JobOutputs | undefined, started: Date): Promise<void> {
  const duration = Number(result?.metadata?.duration);
  if (!result || !command.created_by || Object.keys(result.conversions).length === 0 || !Number.isFinite(duration) || duration <= 0) return;
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

/** The consumer as transcode declares it to the shared start-up. */
export const transcodeJobWorker = (deps: TranscodeConsumerDeps, runtime: JobRuntime): Worker => jobWorker(transcodeJobs(deps), runtime);
