import { createHash, randomUUID } from 'node:crypto';
import { connectNats, DAM_INTERNAL, ensureStreams, jobReportSubject, type JobReport, type JobWorker } from '@dam/events';
import { createLogger } from '@dam/logging';
import { startNats, waitFor } from '@dam/testing';
import { consumeJobReports, JOB_REPORTS_DURABLE } from '../src/consumers/job-reports.consumer';
import type { RunInTransaction } from '../src/domain/ports';
import { finalReport, jobIdOf, principal, startMetadata, type Harness, registerAsset } from './harness';

// Security review F16 (issue 30): a worker kind's report is applied only to a job of that kind. The subject says who
// published it (each worker identity may publish its own `dam.internal.jobs.reports.<worker>` only).
let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const GROUP = 16;
const admin = principal({ group_id: GROUP, user_id: 11 });
const checksum = createHash('md5').update('png').digest('hex');

const create = (): Promise<string> => registerAsset(h, admin, { name: 'f' });

/** Published as `kind`'s identity would, and read by metadata's durable (its ack floor past it) before this returns. */
async function publishAs(kind: JobWorker, report: JobReport): Promise<void> {
  // A request on a stream's subject is answered by JetStream's acknowledgement (the stored sequence).
  const { seq } = (await h.nc.request(jobReportSubject(kind), JSON.stringify(report))).json<{ seq: number }>();
  const handled = async () => {
    const info = (await h.nc.request(`$JS.API.CONSUMER.INFO.${DAM_INTERNAL}.${JOB_REPORTS_DURABLE}`)).json<{
      delivered: { stream_seq: number };
      num_pending: number;
      num_ack_pending: number;
    }>();
    return info.delivered.stream_seq >= seq && info.num_pending === 0 && info.num_ack_pending === 0;
  };
  await waitFor(handled, { description: `report ${seq} handled` });
}

const jobRow = async (jobId: number) =>
  (
    await h.pool.query<{ status: string; lease_owner: string | null; progress: number }>('SELECT status, lease_owner, progress FROM jobs WHERE id = $1', [
      jobId,
    ])
  ).rows[0];

describe('job reports bound to the worker kind (F16)', () => {
  it("ignores another kind's reports about a conversion job, and the conversion worker's own report still ends it", async () => {
    const id = await create();
    const jobId = await jobIdOf(h, id);
    const made = {
      id: randomUUID(),
      asset_id: id,
      group_id: String(GROUP),
      source_checksum: checksum,
      image: { width: 4, height: 3 },
      conversions: { thumb: { object_key: `conversions/${GROUP}/${id}/${checksum}/thumb.webp`, content_type: 'image/webp', width: 4, height: 3, size: 10 } },
      errors: {},
    };
    const real = await finalReport(h, made, { id: `job-${jobId}-done`, worker: 'conversion@test:1' });

    // The addon identity renews the lease and completes the processing job: neither changes it.
    await publishAs('addon', { ...real, id: randomUUID(), state: 'PROGRESS', progress: 40, worker: 'addon@evil:1' });
    expect(await jobRow(jobId)).toMatchObject({ status: 'QUEUED', lease_owner: null, progress: 0 });
    // The same id as the real final report: a forgery must not use it up either.
    await publishAs('addon', { ...real, worker: 'addon@evil:1' });
    await publishAs('webhook', { ...real, id: randomUUID(), worker: 'webhook@evil:1', state: 'FAILED', error: 'forged' });
    expect(await jobRow(jobId)).toMatchObject({ status: 'QUEUED', lease_owner: null });

    await publishAs('conversion', real);
    expect(await jobRow(jobId)).toMatchObject({ status: 'COMPLETED', progress: 100 });
  });
});

describe('upgrading from the single report subject', () => {
  it('replaces the durable the previous version made (nats-server 2.9 delivers nothing after a filter update)', async () => {
    const nats = await startNats();
    const admin = await connectNats(nats.url, 'test-admin', nats.seed('admin'));
    const metadata = await connectNats(nats.url, 'metadata', nats.seed('metadata'));
    try {
      await ensureStreams(metadata);
      // As the previous version created it.
      const old = {
        stream_name: DAM_INTERNAL,
        config: { durable_name: JOB_REPORTS_DURABLE, ack_policy: 'explicit', filter_subject: 'dam.internal.jobs.reports' },
      };
      await admin.request(`$JS.API.CONSUMER.DURABLE.CREATE.${DAM_INTERNAL}.${JOB_REPORTS_DURABLE}`, JSON.stringify(old));
      await admin.request(
        jobReportSubject('conversion'),
        JSON.stringify({ id: 'r1', job_id: 1, attempt: 0, group_id: '1', asset_id: 'a', worker: 'conversion@t:1', state: 'PROGRESS', step: 's', progress: 1 }),
      );
      let applied = 0;
      const count: RunInTransaction = async () => {
        applied += 1;
        return 'renewed' as never;
      };
      const consumer = await consumeJobReports(metadata, count, createLogger({ service: 'metadata-test', level: 'silent' }), 1);
      await waitFor(async () => applied === 1, { description: 'the report read through the replaced durable' });
      await consumer.stop();
    } finally {
      await metadata.close();
      await admin.close();
      await nats.stop();
    }
  });
});
