import { CONVERSIONS_STEP, endOfOutputs, isDecodableImage, jobWorker, type JobHandler, type JobRuntime } from '@dam/jobs';
import type { JobCommand } from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { countReport, startConversionTimer } from './conversion.metrics';
import { convertAsset, emptyReport, failureReport, type ConvertAssetDeps, type ConvertAssetInput } from '../use-cases/convert-asset.use-case';

export const JOBS_DURABLE = 'conversion-jobs';

/**
 * Key under which a whole-original failure is reported (corrupt file, retries exhausted): the failure is not
 * about one conversion, and `original` is the key the contract uses for a failed original.
 */
export const ORIGINAL_ERROR_KEY = 'original';

export interface JobConsumerDeps extends ConvertAssetDeps {
  logger: Logger;
}

const inputOf = (command: JobCommand): ConvertAssetInput => ({
  groupId: command.group_id,
  assetId: command.asset_id,
  checksum: command.source_checksum,
  ...(command.source_key ? { sourceKey: command.source_key } : {}),
  ...(command.settings ? { settings: command.settings } : {}),
});

/**
 * The conversion worker: makes the profile's image outputs of one original (or the keys a re-run names). A file
 * that is no usable image ends the job FAILED at once (retrying cannot fix it); anything else throws and is retried.
 */
export function conversionJobs(deps: JobConsumerDeps): JobHandler {
  return {
    worker: 'conversion',
    durable: JOBS_DURABLE,
    firstStep: () => CONVERSIONS_STEP,
    noun: 'conversion',
    givenUp: (command, why) => endOfOutputs(failureReport(inputOf(command), ORIGINAL_ERROR_KEY, why)).report,
    async run({ command, log, progress }) {
      const input = inputOf(command);
      if (!isDecodableImage(command.content_type)) {
        // A job opened before metadata knew the type: stored and downloadable, nothing to make.
        deps.logger.info({ ...log, content_type: command.content_type }, 'image type not convertible: nothing to make');
        return endOfOutputs(emptyReport(input));
      }
      deps.logger.info(log, 'conversion started');
      const started = Date.now();
      const timed = startConversionTimer();
      let result;
      try {
        result = await convertAsset(input, deps, progress, command.keys);
      } catch (error) {
        if (!(error instanceof UnprocessableImageError)) {
          timed('failed');
          throw error;
        }
        // Retrying cannot fix the file: report now so the asset turns ERROR without waiting for every retry.
        deps.logger.warn({ ...log, err: { message: error.message } }, 'original is not a usable image');
        result = failureReport(input, ORIGINAL_ERROR_KEY, error.message);
      }
      timed(Object.keys(result.errors).length > 0 ? 'error' : 'ok');
      countReport(result);
      deps.logger.info({ ...log, conversions: Object.keys(result.conversions), errors: result.errors, ms: Date.now() - started }, 'conversion finished');
      return endOfOutputs(result);
    },
  };
}

/** The consumer as conversion declares it to the shared start-up. */
export const conversionJobWorker = (deps: JobConsumerDeps, runtime: JobRuntime): Worker => jobWorker(conversionJobs(deps), runtime);
