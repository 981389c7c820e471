/* eslint-disable @typescript-eslint/no-explicit-any -- message payloads are untyped JSON; the assertions check them */
import { createHash, randomUUID } from 'node:crypto';
import { DAM_INTERNAL, jobFailedNoticeSchema, noticeSubject, type ConversionsCompleted } from '@dam/events';
import { createLogger } from '@dam/logging';
import { waitFor } from '@dam/testing';
import { sweepJobLeases } from '../src/use-cases/sweep-job-leases.use-case';
import { collect, finalReport, jobIdOf, principal, publishReport, startMetadata, type Harness, registerAsset } from './harness';

// Login's notifications (issue 32): a job a user asked for that ends in ERROR is told to auth
// (dam.internal.notices.job-failed), written in the transaction that ends the job, once.
let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const GROUP = 8;
const uploader = principal({ group_id: GROUP, user_id: 21 });
const checksum = createHash('md5').update('png').digest('hex');

const create = (name: string): Promise<string> => registerAsset(h, uploader, { name });

const made = (id: string, errors: Record<string, string>): ConversionsCompleted => ({
  id: randomUUID(),
  asset_id: id,
  group_id: String(GROUP),
  source_checksum: checksum,
  image: null,
  conversions: {},
  errors,
});

/** The job-failed notices in the outbox for a job (published or not). */
const noticesOf = async (jobId: number) =>
  (
    await h.pool.query<{ payload: any }>(`SELECT payload FROM outbox WHERE subject = $1 AND payload->>'job_id' = $2`, [
      noticeSubject('job-failed'),
      String(jobId),
    ])
  ).rows.map((r) => r.payload);

describe('job-failed notices', () => {
  it("a FAILED report: one notice for the job's creator, written with the ERROR and published by metadata's identity", async () => {
    const published = await collect(h.nc, DAM_INTERNAL, noticeSubject('job-failed'));
    const id = await create('photo.jpg');
    const jobId = await jobIdOf(h, id);
    expect(await noticesOf(jobId)).toEqual([]);
    const report = await finalReport(h, made(id, { thumb: 'corrupt image' }));
    publishReport(h, report);
    // The same report again (a redelivery): still one notice.
    publishReport(h, { ...report, id: randomUUID() });
    await waitFor(async () => (await h.pool.query('SELECT status FROM jobs WHERE id = $1', [jobId])).rows[0].status === 'ERROR', {
      description: 'job in ERROR',
    });
    const [notice, ...more] = await noticesOf(jobId);
    expect(more).toEqual([]);
    expect(jobFailedNoticeSchema.parse(notice)).toEqual({
      id: `job-failed-${jobId}`,
      kind: 'job-failed',
      group_id: GROUP,
      user_id: 21,
      job_id: jobId,
      job_type: 'processing',
      asset_name: 'photo.jpg',
      asset_count: 1,
      error: 'thumb: corrupt image',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    await waitFor(() => published.messages.some((m) => m.payload.job_id === jobId), { description: 'the notice published' });
    await published.stop();
  });

  it('the lease sweep giving up: a notice too; a job that completes or is rolled back: none', async () => {
    const logger = createLogger({ service: 'notice-test', level: 'silent' });
    const id = await create('slow.png');
    const jobId = await jobIdOf(h, id);
    const expire = () => h.pool.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [jobId]);
    await expire();
    expect(await sweepJobLeases(h.transactions, { ...h.timings, maxAttempts: 1 }, logger)).toMatchObject({ failed: 1 });
    expect(await noticesOf(jobId)).toEqual([
      expect.objectContaining({ job_id: jobId, asset_name: 'slow.png', error: expect.stringMatching(/after 1 attempt/) }),
    ]);

    // The ERROR rolled back: so is its notice.
    const other = await create('other.png');
    const otherJob = await jobIdOf(h, other);
    const client = await h.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`UPDATE jobs SET status = 'ERROR', error = 'x' WHERE id = $1`, [otherJob]);
      expect((await client.query(`SELECT count(*)::int AS n FROM outbox WHERE id = $1`, [`job-failed-${otherJob}`])).rows[0].n).toBe(1);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await noticesOf(otherJob)).toEqual([]);
    // Completed: nothing to tell.
    await h.pool.query(`UPDATE jobs SET status = 'COMPLETED' WHERE id = $1`, [otherJob]);
    expect(await noticesOf(otherJob)).toEqual([]);
  });
});
