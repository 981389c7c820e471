import type { Worker } from '@dam/http';
import { jobWorker, type JobHandler, type JobRuntime } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { IngestDeferred, IngestFailure, type IngestConfig } from '../domain/ingest';
import { downloadOriginal } from '../use-cases/download-original.use-case';

export const INGEST_DURABLE = 'upload-jobs';
const STEP = 'download';

export interface IngestConsumerDeps {
  storage: Storage;
  logger: Logger;
  ingest: IngestConfig;
  ownBucket: string;
}

/**
 * The longest a deferred ingest waits before it is tried again: well within the lease metadata gives a job no
 * worker has reported on yet (10 minutes), so the job is not handed out a second time meanwhile.
 */
export const MAX_DEFER_MS = 5 * 60_000;

/**
 * The ingest worker: downloads one Ingest from URI's source into the asset's original. A source that is the problem
 * (refused, 404, too large, too slow) ends the job FAILED; a group over its rate for the host waits its turn.
 * `maxDeliver` is the consumer's, so that a deferral never spends the last delivery.
 */
export function ingestJobs(deps: IngestConsumerDeps, maxDeliver: number): JobHandler {
  return {
    worker: 'upload',
    durable: INGEST_DURABLE,
    firstStep: () => STEP,
    noun: 'the download',
    async run({ command, ctx, log, progress }) {
      const source = command.params?.key ?? '';
      deps.logger.info(log, 'ingest started');
      try {
        const stored = await downloadOriginal(
          deps.storage,
          deps.ingest,
          deps.ownBucket,
          { groupId: command.group_id, assetId: command.asset_id, source },
          progress,
        );
        deps.logger.info({ ...log, size: stored.size }, 'ingest finished');
        return {
          state: 'COMPLETED',
          report: {
            ingested: {
              object_key: stored.objectKey,
              size: stored.size,
              checksum: stored.checksum,
              content_type: stored.contentType,
              metadata: stored.metadata,
            },
          },
        };
      } catch (error) {
        if (error instanceof IngestDeferred && ctx.deliveryCount < maxDeliver) {
          // The group's rate for this host is spent: the job waits its turn (redelivered later) instead of failing.
          // Nothing was reported yet (the start is reported after JOB_START_REPORT_DELAY_MS), so metadata keeps it QUEUED.
          const delay = Math.min(MAX_DEFER_MS, Math.max(1000, error.retryAfterMs));
          ctx.msg.nak(delay);
          deps.logger.info({ ...log, retryInMs: delay, reason: error.message }, 'ingest deferred: the group downloads too much from this host');
          return { state: 'DEFERRED' };
        }
        if (!(error instanceof IngestFailure) && !(error instanceof IngestDeferred)) throw error;
        deps.logger.warn({ ...log, reason: error.message }, 'ingest failed');
        return { state: 'FAILED', report: { error: error.message } };
      }
    },
  };
}

/** Ingest jobs as upload declares them to the shared start-up. */
export const ingestJobWorker = (deps: IngestConsumerDeps, runtime: JobRuntime): Worker => jobWorker(ingestJobs(deps, runtime.maxDeliver), runtime);
