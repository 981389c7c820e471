import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { jobCommandWorker, startJobReporter, workerId, type JobCommand, type JobConsumerOptions, type MessageContext, type ReportPacing } from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { downloadOriginal, IngestDeferred, IngestFailure, type IngestConfig } from '../domain/ingest';

export const INGEST_DURABLE = 'upload-jobs';
const WORKER_ID = workerId('upload');
const STEP = 'download';

export interface IngestConsumerDeps {
  js: JetStreamClient;
  storage: Storage;
  logger: Logger;
  ingest: IngestConfig;
  ownBucket: string;
  /** How its reports about a job are paced (JOB_HEARTBEAT_MS, JOB_PROGRESS_INTERVAL_MS, JOB_START_REPORT_DELAY_MS). */
  pacing: ReportPacing;
}

/**
 * The longest a deferred ingest waits before it is tried again: well within the lease metadata gives a job no
 * worker has reported on yet (10 minutes), so the job is not handed out a second time meanwhile.
 */
export const MAX_DEFER_MS = 5 * 60_000;

/** One ingest job command; `maxDeliver` is the consumer's, so that a deferral never spends the last delivery. */
export function handleIngestJob(deps: IngestConsumerDeps, maxDeliver: number) {
  return async (command: JobCommand, ctx: MessageContext): Promise<void> => {
    const log = { job_id: command.job_id, asset_id: command.asset_id, group_id: command.group_id, attempt: command.attempt, delivery: ctx.deliveryCount };
    const source = command.params?.key ?? '';
    const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: STEP, pacing: deps.pacing, logger: deps.logger });
    const stopKeepAlive = ctx.keepAlive();
    deps.logger.info(log, 'ingest started');
    try {
      const stored = await downloadOriginal(deps.storage, deps.ingest, deps.ownBucket, { groupId: command.group_id, assetId: command.asset_id, source }, (done, total) =>
        reporter.progress(done, total),
      );
      await reporter.finish('COMPLETED', {
        ingested: { object_key: stored.objectKey, size: stored.size, checksum: stored.checksum, content_type: stored.contentType, metadata: stored.metadata },
      });
      deps.logger.info({ ...log, size: stored.size }, 'ingest finished');
    } catch (error) {
      if (error instanceof IngestDeferred && ctx.deliveryCount < maxDeliver) {
        // The group's rate for this host is spent: the job waits its turn (redelivered later) instead of failing.
        // Nothing was reported yet (the start is reported after JOB_START_REPORT_DELAY_MS), so metadata keeps it QUEUED.
        reporter.stop();
        const delay = Math.min(MAX_DEFER_MS, Math.max(1000, error.retryAfterMs));
        ctx.msg.nak(delay);
        deps.logger.info({ ...log, retryInMs: delay, reason: error.message }, 'ingest deferred: the group downloads too much from this host');
        return;
      }
      if (!(error instanceof IngestFailure) && !(error instanceof IngestDeferred)) throw error;
      // The source is the problem (refused, 404, too large, too slow): retrying would not help.
      await reporter.finish('FAILED', { error: error.message });
      deps.logger.warn({ ...log, reason: error.message }, 'ingest failed');
    } finally {
      reporter.stop();
      stopKeepAlive();
    }
  };
}

/** Ingest jobs as upload declares them to the shared start-up. */
export function ingestJobWorker(nc: NatsConnection, deps: IngestConsumerDeps, options: JobConsumerOptions): Worker {
  return jobCommandWorker({
    nc,
    worker: 'upload',
    durable: INGEST_DURABLE,
    handler: handleIngestJob(deps, options.maxDeliver),
    logger: deps.logger,
    ...options,
    // Storage kept failing for every delivery: the job fails, so the asset does not stay NOT_READY.
    onDeadLetter: async (command, error) => {
      const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: STEP, pacing: deps.pacing, logger: deps.logger });
      await reporter.finish('FAILED', { error: `the download failed after every retry: ${error instanceof Error ? error.message : String(error)}` });
    },
  });
}
