import type { Worker } from '@dam/http';
import { jobWorker, type JobHandler, type JobRuntime } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import type { DeliveryRepository } from '../adapters/delivery.repository';
import type { WebhookSettings } from '../domain/delivery';

export const REISSUE_DURABLE = 'webhook-jobs';

export interface ReissueDeps {
  repo: DeliveryRepository;
  settings: (groupId: number) => Promise<WebhookSettings>;
  wake: () => void;
  logger: Logger;
}

/**
 * A reissue of callbacks (spec endpoint 18): every event of the range whose asset the requester created is sent
 * again to the group's URLs of now, as new messages (new webhook ids), signed and logged like the first.
 */
export function reissueJobs(deps: ReissueDeps): JobHandler {
  return {
    worker: 'webhook',
    durable: REISSUE_DURABLE,
    firstStep: (command) => command.type,
    noun: 'the reissue',
    async run({ command }) {
      if (command.type !== 'reissue_callbacks' || !command.range || !command.requested_by) {
        return { state: 'FAILED', report: { error: `a ${command.type} job without a range and a requester cannot run here` } };
      }
      const groupId = Number(command.group_id);
      const { urls } = await deps.settings(groupId);
      const opened = await deps.repo.reissue({
        groupId,
        userId: command.requested_by.user_id,
        from: command.range.from,
        to: command.range.to,
        jobId: command.job_id,
        urls,
      });
      deps.wake();
      deps.logger.info({ job_id: command.job_id, group_id: groupId, deliveries: opened }, 'callbacks reissued');
      return { state: 'COMPLETED' };
    },
  };
}

export const reissueWorker = (deps: ReissueDeps, runtime: JobRuntime): Worker => jobWorker(reissueJobs(deps), runtime);
