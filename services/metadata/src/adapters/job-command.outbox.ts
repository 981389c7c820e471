import type { PoolClient } from '@dam/db';
import { jobCommand, type JobCommand } from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import type { Asset } from '../domain/asset';
import type { Job } from '../domain/job';
import type { JobCommandWriter } from '../domain/ports';

/** Job commands go out through the outbox, so a job exists exactly when its command will be sent. */
export class OutboxJobCommandWriter implements JobCommandWriter {
  constructor(private readonly client: Pick<PoolClient, 'query'>) {}

  async send(job: Job, asset: Asset | undefined, attempt: number): Promise<void> {
    if (!job.worker) throw new Error(`job ${job.id} has no worker to send it to`);
    const { subject, schema } = jobCommand(job.worker);
    const payload: JobCommand = {
      id: `job-${job.id}-run-${attempt}`,
      job_id: job.id,
      attempt,
      type: job.type,
      group_id: String(job.groupId),
      asset_id: asset?.id ?? '',
      source_checksum: asset?.checksum ?? '',
      ...(asset ? { source_key: asset.objectKey } : {}),
      content_type: asset?.contentType ?? '',
      ...(job.params.keys ? { keys: job.params.keys } : {}),
      ...(job.params.settings ? { settings: job.params.settings } : {}),
      ...(job.params.source ? { params: { key: job.params.source, name: job.params.name ?? '' } } : {}),
      ...(job.params.urls ? { urls: job.params.urls } : {}),
      ...(job.params.range ? { range: job.params.range } : {}),
      ...(job.createdBy ? { created_by: job.createdBy } : {}),
      ...(job.createdBy && job.params.roleId ? { requested_by: { user_id: job.createdBy, role_id: job.params.roleId } } : {}),
    };
    await writeOutbox(this.client, { id: payload.id, subject, schema, payload });
  }
}
