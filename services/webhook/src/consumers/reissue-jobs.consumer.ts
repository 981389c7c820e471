import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { jobCommandWorker, startJobReporter, workerId, type JobCommand, type JobConsumerOptions, type ReportPacing } from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { DeliveryRepository } from '../adapters/delivery.repository';
import type { WebhookSettings } from '../domain/delivery';

export const REISSUE_DURABLE = 'webhook-jobs';
const WORKER_ID = workerId('webhook');

export interface ReissueDeps {
  js: JetStreamClient;
  repo: DeliveryRepository;
  settings: (groupId: number) => Promise<WebhookSettings>;
  wake: () => void;
  logger: Logger;
  /** How its reports about a job are paced (JOB_HEARTBEAT_MS, JOB_PROGRESS_INTERVAL_MS, JOB_START_REPORT_DELAY_MS). */
  pacing: ReportPacing;
}

/**
 * A reissue of callbacks (spec endpoint 18): every event of the range whose asset the requester created is sent
 * again to the group's URLs of now, as new messages (new webhook ids), signed and logged like the first.
 */
export function handleReissue(deps: ReissueDeps) {
  return async (command: JobCommand): Promise<void> => {
    const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: command.type, pacing: deps.pacing, logger: deps.logger });
    try {
      if (command.type !== 'reissue_callbacks' || !command.range || !command.requested_by) {
        await reporter.finish('FAILED', { error: `a ${command.type} job without a range and a requester cannot run here` });
        return;
      }
      const groupId = Number(command.group_id);
      const { urls } = await deps.settings(groupId);
      const opened = await deps.repo.reissue({ groupId, userId: command.requested_by.user_id, from: command.range.from, to: command.range.to, jobId: command.job_id, urls });
      deps.wake();
      await reporter.finish('COMPLETED');
      deps.logger.info({ job_id: command.job_id, group_id: groupId, deliveries: opened }, 'callbacks reissued');
    } finally {
      reporter.stop();
    }
  };
}

export function reissueWorker(nc: NatsConnection, deps: ReissueDeps, options: JobConsumerOptions): Worker {
  return jobCommandWorker({
    nc,
    worker: 'webhook',
    durable: REISSUE_DURABLE,
    handler: handleReissue(deps),
    onDeadLetter: async (command, error) => {
      const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: command.type, pacing: deps.pacing, logger: deps.logger });
      await reporter.finish('FAILED', { error: `the reissue failed after every retry: ${error instanceof Error ? error.message : String(error)}` });
    },
    logger: deps.logger,
    ...options,
  });
}
