/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomUUID } from 'node:crypto';
import { ASSET_EVENTS, DAM_INTERNAL, jobCommandSubject, type ConversionsCompleted, type JobReport } from '@dam/events';
import { createLogger } from '@dam/logging';
import { originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { sweepJobLeases } from '../src/use-cases/sweep-job-leases.use-case';
import { collect, finalReport, jobIdOf, principal, publishReport, signedFetch, startMetadata, type Harness, registerAsset } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const GROUP = 6;
const admin = principal({ group_id: GROUP, user_id: 11 });
const creator = principal({ group_id: GROUP, user_id: 12, role: 'CREATOR' });
const checksum = createHash('md5').update('png').digest('hex');

const create = (p: ReturnType<typeof principal>, contentType = 'image/png'): Promise<string> => registerAsset(h, p, { name: 'f', contentType });

const get = async (path: string, p = admin) => {
  const res = await signedFetch(`${h.url}${path}`, p);
  return { status: res.status, body: (await res.json()) as any };
};

/** The jobs of one asset, newest first. */
const jobsOf = async (id: string, p = admin) => (await get('/api/v1/jobs?page_size=100', p)).body.items.filter((j: any) => j.asset_ids.includes(id));

function made(id: string, overrides: Partial<ConversionsCompleted> = {}): ConversionsCompleted {
  return {
    id: randomUUID(),
    asset_id: id,
    group_id: String(GROUP),
    source_checksum: checksum,
    image: { width: 4, height: 3 },
    conversions: { thumb: { object_key: `conversions/${GROUP}/${id}/${checksum}/thumb.webp`, content_type: 'image/webp', width: 4, height: 3, size: 10 } },
    errors: {},
    ...overrides,
  };
}

describe('jobs (CONTRACT §6)', () => {
  it('opens a processing job with the upload, in the same transaction, and completes it with the report', async () => {
    const id = await create(admin);
    const [queued] = await jobsOf(id);
    expect(queued).toEqual({
      job_id: expect.any(Number),
      type: 'processing',
      status: 'QUEUED',
      asset_ids: [id],
      steps: [{ name: 'conversions', status: 'QUEUED', started_at: null, finished_at: null }],
      progress: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      error: null,
    });
    expect((await get(`/api/v1/jobs/${queued.job_id}`)).body).toEqual(queued);

    publishReport(h, await finalReport(h, made(id)));
    await waitFor(async () => (await get(`/api/v1/jobs/${queued.job_id}`)).body.status === 'COMPLETED', { description: 'job completed' });
    const done = (await get(`/api/v1/jobs/${queued.job_id}`)).body;
    expect(done).toMatchObject({ status: 'COMPLETED', progress: 100, error: null });
    const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(done.steps).toEqual([{ name: 'conversions', status: 'COMPLETED', started_at: iso, finished_at: iso }]);
    expect(Date.parse(done.updated_at)).toBeGreaterThanOrEqual(Date.parse(queued.updated_at));
  });

  it("a job reported late or only at its end (the start delay): its step started when the worker says, kept within the job's life", async () => {
    const finished = async (startedAt: (created: number) => number, reportStart = false) => {
      const id = await create(admin);
      const [queued] = await jobsOf(id);
      const created = Date.parse(queued.created_at);
      await new Promise((r) => setTimeout(r, 300));
      const told = { started_at: new Date(startedAt(created)).toISOString() };
      if (reportStart) {
        const started = await finalReport(h, made(id), { ...told, id: randomUUID(), state: 'STARTED', progress: 0 });
        delete started.conversions;
        publishReport(h, started);
        await waitFor(async () => (await get(`/api/v1/jobs/${queued.job_id}`)).body.status === 'IN_PROGRESS', { description: 'job started' });
        // Written as the job's own times are (ISO 8601, milliseconds, `Z`), whatever the database keeps.
        expect((await get(`/api/v1/jobs/${queued.job_id}`)).body.steps[0].started_at).toBe(told.started_at);
        await new Promise((r) => setTimeout(r, 100));
      }
      publishReport(h, await finalReport(h, made(id), told));
      await waitFor(async () => (await get(`/api/v1/jobs/${queued.job_id}`)).body.status === 'COMPLETED', { description: 'job completed' });
      const [step] = (await get(`/api/v1/jobs/${queued.job_id}`)).body.steps;
      return { created, started: Date.parse(step.started_at), finished: Date.parse(step.finished_at) };
    };
    const told = await finished((created) => created + 100);
    expect(told.started).toBe(told.created + 100);
    expect(told.finished).toBeGreaterThanOrEqual(told.created + 300);
    // A worker's clock behind the database's: not before the job existed; ahead of it: not after its end.
    const early = await finished((created) => created - 60_000);
    expect(early.started).toBe(early.created);
    const late = await finished((created) => created + 60_000);
    expect(late.started).toBe(late.finished);
    // STARTED sent late (the job outlived the delay): the step began when the worker took the job, not at the report.
    const slow = await finished((created) => created + 50, true);
    expect(slow.started).toBe(slow.created + 50);
    expect(slow.finished).toBeGreaterThanOrEqual(slow.created + 400);
  });

  it('ends the job in ERROR with the reason when every conversion failed', async () => {
    const id = await create(admin);
    publishReport(h, await finalReport(h, made(id, { conversions: {}, image: null, errors: { thumb: 'corrupt image' } })));
    await waitFor(async () => (await jobsOf(id))[0]?.status === 'ERROR', { description: 'job in error' });
    expect((await jobsOf(id))[0]).toMatchObject({ status: 'ERROR', progress: 100, error: 'thumb: corrupt image', steps: [{ status: 'ERROR' }] });
  });

  it('opens no job for an asset nothing processes', async () => {
    const id = await create(admin, 'text/plain');
    expect(await jobsOf(id)).toEqual([]);
  });

  it("lists with filters and pages, only in the caller's group, and a CREATOR only its own", async () => {
    const mine = await create(creator);
    const theirs = await create(admin);
    const queued = await get('/api/v1/jobs?status=QUEUED&type=processing&page_size=100');
    expect(queued.status).toBe(200);
    expect(queued.body).toMatchObject({ page: 1, page_size: 100, total: expect.any(Number) });
    expect(queued.body.items.every((j: any) => j.status === 'QUEUED' && j.type === 'processing')).toBe(true);
    expect(queued.body.items.map((j: any) => j.asset_ids[0])).toEqual(expect.arrayContaining([mine, theirs]));
    // Newest first, one per page.
    const first = await get('/api/v1/jobs?page_size=1&page=1');
    const second = await get('/api/v1/jobs?page_size=1&page=2');
    expect(first.body.items).toHaveLength(1);
    expect(first.body.items[0].job_id).toBeGreaterThan(second.body.items[0].job_id);

    const asCreator = await get('/api/v1/jobs?page_size=100', creator);
    expect(asCreator.body.items.map((j: any) => j.asset_ids[0])).toEqual([mine]);
    const theirJob = (await jobsOf(theirs))[0].job_id;
    expect((await get(`/api/v1/jobs/${theirJob}`, creator)).status).toBe(404);
    const otherGroup = await get(`/api/v1/jobs/${theirJob}`, principal({ group_id: GROUP + 1 }));
    expect(otherGroup).toEqual({ status: 404, body: { error: { code: 'JOB_NOT_FOUND', message: expect.any(String) } } });
    expect((await get('/api/v1/jobs?page_size=100', principal({ group_id: GROUP + 1 }))).body.items).toEqual([]);
  });

  it("answers bad filters with 400 and ids of no job's form with 404 (CONTRACT §16)", async () => {
    for (const path of ['/api/v1/jobs?status=DONE', '/api/v1/jobs?type=teleport', '/api/v1/jobs?page=0', '/api/v1/jobs?page_size=101']) {
      const res = await get(path);
      expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 400, code: 'VALIDATION_FAILED' });
    }
    expect((await get('/api/v1/jobs/999999999')).status).toBe(404);
    // 400 VALIDATION_FAILED before.
    for (const path of ['/api/v1/jobs/abc', '/api/v1/jobs/0', '/api/v1/jobs/1.5', `/api/v1/jobs/${'9'.repeat(20)}`]) {
      const res = await get(path);
      expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 404, code: 'JOB_NOT_FOUND' });
    }
  });

  it('never moves a job backwards, whatever statement tries', async () => {
    const id = await create(admin);
    publishReport(h, await finalReport(h, made(id)));
    await waitFor(async () => (await jobsOf(id))[0]?.status === 'COMPLETED', { description: 'job completed' });
    const jobId = (await jobsOf(id))[0].job_id;
    for (const status of ['QUEUED', 'IN_PROGRESS', 'ERROR']) {
      await expect(h.pool.query('UPDATE jobs SET status = $2 WHERE id = $1', [jobId, status])).rejects.toThrow(/cannot move from COMPLETED/);
    }
    const other = (await jobsOf(await create(admin)))[0].job_id;
    await h.pool.query(`UPDATE jobs SET status = 'IN_PROGRESS' WHERE id = $1`, [other]);
    await expect(h.pool.query(`UPDATE jobs SET status = 'QUEUED' WHERE id = $1`, [other])).rejects.toThrow(/cannot move/);
  });

  it('sends the worker its command through the outbox, with the job', async () => {
    const commands = await collect(h.nc, DAM_INTERNAL, jobCommandSubject('conversion'));
    const id = await create(admin);
    const jobId = await jobIdOf(h, id);
    await waitFor(() => commands.messages.some((m) => m.payload.asset_id === id), { description: 'command on the bus' });
    await commands.stop();
    expect(commands.messages.find((m) => m.payload.asset_id === id)?.payload).toEqual({
      id: `job-${jobId}-run-0`,
      job_id: jobId,
      attempt: 0,
      type: 'processing',
      group_id: String(GROUP),
      asset_id: id,
      source_checksum: checksum,
      source_key: originalKey(String(GROUP), id),
      content_type: 'image/png',
      created_by: 11,
      // What the conversion worker reads of the group's settings (none set here: nothing to make, no GPS).
      settings: { conversions: { custom: {} }, metadata: { keep_gps: false } },
    });
  });

  it("moves to IN_PROGRESS with the worker's progress; another worker cannot take a running lease", async () => {
    const id = await create(admin);
    const jobId = await jobIdOf(h, id);
    const progress = (worker: string, value: number, state: JobReport['state'] = 'PROGRESS'): JobReport => ({
      id: randomUUID(),
      job_id: jobId,
      attempt: 0,
      group_id: String(GROUP),
      asset_id: id,
      worker,
      state,
      step: 'conversions',
      progress: value,
    });
    publishReport(h, progress('conversion@a:1', 0, 'STARTED'));
    publishReport(h, progress('conversion@a:1', 40));
    await waitFor(async () => (await get(`/api/v1/jobs/${jobId}`)).body.progress === 40, { description: 'progress 40' });
    const running = (await get(`/api/v1/jobs/${jobId}`)).body;
    expect(running).toMatchObject({
      status: 'IN_PROGRESS',
      steps: [{ name: 'conversions', status: 'IN_PROGRESS', started_at: expect.any(String), finished_at: null }],
    });
    const { rows } = await h.pool.query('SELECT lease_owner, lease_until > now() AS leased FROM jobs WHERE id = $1', [jobId]);
    expect(rows[0]).toEqual({ lease_owner: 'conversion@a:1', leased: true });

    // A second worker's report (an old duplicate command) neither takes the lease nor moves progress.
    publishReport(h, progress('conversion@b:2', 90));
    publishReport(h, progress('conversion@a:1', 60));
    await waitFor(async () => (await get(`/api/v1/jobs/${jobId}`)).body.progress === 60, { description: 'progress 60' });
    expect((await h.pool.query('SELECT lease_owner FROM jobs WHERE id = $1', [jobId])).rows[0].lease_owner).toBe('conversion@a:1');
    // Progress never goes back.
    publishReport(h, progress('conversion@a:1', 10));
    publishReport(h, await finalReport(h, made(id)));
    await waitFor(async () => (await get(`/api/v1/jobs/${jobId}`)).body.status === 'COMPLETED', { description: 'completed' });
    expect((await get(`/api/v1/assets/${id}/data`)).body.status).toBe('OK');
  });

  it('hands a job whose lease ran out to a worker again, then gives up after the last attempt', async () => {
    const logger = createLogger({ service: 'sweep-test', level: 'silent' });
    const timings = { ...h.timings, maxAttempts: 2 };
    const commands = await collect(h.nc, DAM_INTERNAL, jobCommandSubject('conversion'));
    const events = await collect(h.nc, ASSET_EVENTS, `assets.events.${GROUP}.file-processed`);
    const id = await create(admin);
    const jobId = await jobIdOf(h, id);
    const expire = () => h.pool.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [jobId]);

    // Not expired yet: the sweep leaves it alone.
    expect(await sweepJobLeases(h.transactions, timings, logger)).toMatchObject({ handedOut: 0 });
    await expire();
    expect(await sweepJobLeases(h.transactions, timings, logger)).toMatchObject({ handedOut: 1, failed: 0 });
    await waitFor(() => commands.messages.some((m) => m.payload.id === `job-${jobId}-run-1`), { description: 'second hand-out' });
    expect(commands.messages.find((m) => m.payload.id === `job-${jobId}-run-1`)?.payload).toMatchObject({ attempt: 1, asset_id: id });
    expect((await get(`/api/v1/jobs/${jobId}`)).body.status).toBe('QUEUED');

    await expire();
    expect(await sweepJobLeases(h.transactions, timings, logger)).toMatchObject({ handedOut: 0, failed: 1 });
    const job = (await get(`/api/v1/jobs/${jobId}`)).body;
    expect(job).toMatchObject({ status: 'ERROR', error: expect.stringMatching(/after 2 attempts/) });
    const asset = (await get(`/api/v1/assets/${id}/data`)).body;
    expect(asset).toMatchObject({ status: 'ERROR', errors: { original: expect.stringMatching(/no conversion worker finished/) } });
    await waitFor(() => events.messages.some((m) => m.payload.asset_id === id), { description: 'file-processed ERROR' });
    expect(events.messages.find((m) => m.payload.asset_id === id)?.payload.data.status).toBe('ERROR');
    // A late result of the first worker changes nothing now.
    const late = await finalReport(h, made(id));
    publishReport(h, late);
    // Once it was handled (its id recorded with whatever it did), not after a fixed 500 ms.
    await waitFor(async () => (await h.pool.query('SELECT count(*)::int AS n FROM processed_messages WHERE id = $1', [late.id])).rows[0].n === 1, {
      description: 'the late report handled',
    });
    expect((await get(`/api/v1/assets/${id}/data`)).body.status).toBe('ERROR');
    await commands.stop();
    await events.stop();
  });
});
