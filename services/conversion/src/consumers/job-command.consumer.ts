import type { JetStreamClient } from '@nats-io/jetstream';
import {
  jobCommandWorker,
  startJobReporter,
  workerId,
  type ConversionsCompleted,
  type JobCommand,
  type JobConsumerOptions,
  type JobReport,
  type MessageContext,
  type ReportPacing,
} from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { countReport, startConversionTimer } from './conversion.metrics';
import { convertAsset, emptyReport, failureReport, type ConvertAssetDeps, type ConvertAssetInput } from '../use-cases/convert-asset.use-case';

export const JOBS_DURABLE = 'conversion-jobs';
/** The step of a `processing` job that this worker carries out. */
export const CONVERSIONS_STEP = 'conversions';

/**
 * Key under which a whole-original failure is reported (corrupt file, retries exhausted): the failure is not
 * about one conversion, and `original` is the key the contract uses for a failed original.
 */
export const ORIGINAL_ERROR_KEY = 'original';

/** This process as a lease holder: a job handed out again after a crash shows who holds it now. */
export const WORKER_ID = workerId('conversion');

export interface JobConsumerDeps extends ConvertAssetDeps {
  js: JetStreamClient;
  logger: Logger;
  /** How its reports about a job are paced (JOB_HEARTBEAT_MS, JOB_PROGRESS_INTERVAL_MS, JOB_START_REPORT_DELAY_MS). */
  pacing: ReportPacing;
}

/**
 * Image types sharp's prebuilt libvips decodes. Metadata opens a conversion job for every `image/*` asset, so
 * other image types (icons, PSD, camera raw, HEIC) complete with nothing made: stored and downloadable.
 */
const DECODABLE = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif', 'image/tiff', 'image/svg+xml']);
export const isDecodableImage = (contentType: string): boolean => DECODABLE.has(contentType.toLowerCase());

const inputOf = (command: JobCommand): ConvertAssetInput => ({
  groupId: command.group_id,
  assetId: command.asset_id,
  checksum: command.source_checksum,
  ...(command.source_key ? { sourceKey: command.source_key } : {}),
});

/** A result with errors and no outputs is a failed job; anything else completed (per-key errors are listed). */
const finalOf = (result: ConversionsCompleted): { state: 'COMPLETED' | 'FAILED'; extra: Partial<JobReport> } =>
  Object.keys(result.conversions).length === 0 && Object.keys(result.errors).length > 0
    ? { state: 'FAILED', extra: { conversions: result, error: describe(result.errors) } }
    : { state: 'COMPLETED', extra: { conversions: result } };

const describe = (errors: Record<string, string>): string =>
  Object.entries(errors)
    .map(([key, why]) => `${key}: ${why}`)
    .join('; ');

const reporterFor = (deps: JobConsumerDeps, command: JobCommand) =>
  startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: CONVERSIONS_STEP, pacing: deps.pacing, logger: deps.logger });

export function handleJobCommand(deps: JobConsumerDeps) {
  return async (command: JobCommand, ctx: MessageContext): Promise<void> => {
    const input = inputOf(command);
    const log = { job_id: command.job_id, asset_id: input.assetId, group_id: input.groupId, attempt: command.attempt, delivery: ctx.deliveryCount };
    const reporter = reporterFor(deps, command);
    if (!isDecodableImage(command.content_type)) {
      deps.logger.info({ ...log, content_type: command.content_type }, 'image type not convertible: nothing to make');
      await reporter.finish('COMPLETED', { conversions: emptyReport(input) });
      return;
    }
    deps.logger.info(log, 'conversion started');
    const started = Date.now();
    const timed = startConversionTimer();
    const stopKeepAlive = ctx.keepAlive();
    let result: ConversionsCompleted;
    try {
      result = await convertAsset(input, deps, (done, total) => {
        ctx.working();
        reporter.progress(done, total);
      }, command.keys);
    } catch (error) {
      if (!(error instanceof UnprocessableImageError)) {
        timed('failed');
        throw error;
      }
      // Retrying cannot fix the file: report now so the asset turns ERROR without waiting for every retry.
      deps.logger.warn({ ...log, err: { message: error.message } }, 'original is not a usable image');
      result = failureReport(input, ORIGINAL_ERROR_KEY, error.message);
    } finally {
      reporter.stop();
      stopKeepAlive();
    }
    try {
      const { state, extra } = finalOf(result);
      await reporter.finish(state, extra);
    } catch (error) {
      timed('failed');
      throw error;
    }
    timed(Object.keys(result.errors).length > 0 ? 'error' : 'ok');
    countReport(result);
    deps.logger.info(
      { ...log, conversions: Object.keys(result.conversions), errors: result.errors, ms: Date.now() - started },
      'conversion finished',
    );
  };
}

/** After the last delivery failed: end the job as failed, so the asset ends in ERROR instead of NOT_READY. */
export function deadLetterJobCommand(deps: JobConsumerDeps) {
  return async (command: JobCommand, error: unknown): Promise<void> => {
    const message = `conversion failed after every retry: ${error instanceof Error ? error.message : String(error)}`;
    const result = failureReport(inputOf(command), ORIGINAL_ERROR_KEY, message);
    const { state, extra } = finalOf(result);
    await reporterFor(deps, command).finish(state, extra);
    countReport(result);
    deps.logger.error({ job_id: command.job_id, asset_id: command.asset_id, group_id: command.group_id }, 'conversion given up: error reported');
  };
}

/** The consumer as conversion declares it to the shared start-up. */
export function conversionJobWorker(nc: Parameters<typeof jobCommandWorker>[0]['nc'], deps: JobConsumerDeps, options: JobConsumerOptions): Worker {
  return jobCommandWorker({ nc, worker: 'conversion', durable: JOBS_DURABLE, handler: handleJobCommand(deps), onDeadLetter: deadLetterJobCommand(deps), logger: deps.logger, ...options });
}
