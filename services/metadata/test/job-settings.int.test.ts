import { createHash, randomUUID } from 'node:crypto';
import { jobCommandSubject, type JobCommand, type JobReport, type JobWorker } from '@dam/events';
import { createLogger } from '@dam/logging';
import { originalKey, replacementKey } from '@dam/storage';
import { autoAddonsPlanner } from '../src/use-cases/addons.use-case';
import { applyJobReport } from '../src/use-cases/apply-job-report.use-case';
import { sweepJobLeases } from '../src/use-cases/sweep-job-leases.use-case';
import { assetId, finalReport, principal, signedFetch, startMetadata, type Harness } from './harness';

/**
 * Issue 32 (structure review §4 point 1): a processing job carries the settings its worker reads, as they were when it
 * was opened, in jobs.params and in every command that hands it out; a worker never asks auth at work time.
 */
let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 41;
const admin = principal({ group_id: GROUP, user_id: 3 });
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const WATERMARK = 'a'.repeat(32);

const thumb = { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 };
/** The group's settings at first: more than any worker reads (a webhook secret, an unused custom conversion). */
const FIRST = {
  conversions: {
    profile: { image: ['smart_imaging', 'thumb'], video: ['360p-video', 'hls'] },
    custom: { thumb, banner: { width: 600, height: 200 } },
    watermark_asset_id: WATERMARK,
  },
  metadata: { keep_gps: true },
  addons: { auto: { video: ['storyboard'] } },
  webhooks: { url: 'https://example.com/hook', secret: 's3cret' },
};
/** What an image's job carries of FIRST, and a video's. */
const FIRST_IMAGE = { conversions: { profile: { image: ['smart_imaging', 'thumb'] }, custom: { thumb } }, metadata: { keep_gps: true } };
const FIRST_VIDEO = { conversions: { profile: { video: ['360p-video', 'hls'] }, watermark_asset_id: WATERMARK }, addons: { auto: { video: ['storyboard'] } } };

/** The settings after a change: another profile and banner spec, no GPS, no watermark, no automatic storyboard. */
const banner = { width: 300, height: 100, format: 'jpeg' };
const SECOND = {
  conversions: { profile: { image: ['banner'], video: ['720p-video'] }, custom: { thumb, banner }, watermark_asset_id: null },
  metadata: { keep_gps: false },
  addons: { auto: { video: [] } },
};
const SECOND_IMAGE = { conversions: { profile: { image: ['banner'] }, custom: { banner } }, metadata: { keep_gps: false } };

async function upload(files: Array<{ contentType: string }>): Promise<string[]> {
  const ids = files.map(() => assetId());
  const res = await signedFetch(`${h.url}/internal/v1/assets`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: files.map((f, i) => ({
        id: ids[i],
        name: 'f',
        size: 3,
        checksum: md5(`f${i}`),
        content_type: f.contentType,
        object_key: originalKey(String(GROUP), ids[i] as string),
        metadata: {},
      })),
    }),
  });
  expect(res.status).toBe(201);
  return ids;
}

const call = async (method: string, path: string, body: unknown) => {
  const res = await signedFetch(`${h.url}${path}`, admin, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as unknown };
};

/** The asset's newest processing job: its id and what jobs.params holds. */
async function processingJob(id: string): Promise<{ id: number; params: Record<string, unknown> }> {
  const { rows } = await h.pool.query<{ id: string; params: Record<string, unknown> }>(
    `SELECT id, params FROM jobs WHERE $1 = ANY(asset_ids) AND type = 'processing' ORDER BY id DESC LIMIT 1`,
    [id],
  );
  if (!rows[0]) throw new Error(`asset ${id} has no processing job`);
  return { id: Number(rows[0].id), params: rows[0].params };
}

/** Every command that handed the job out, in order, as the outbox sends them. */
async function commandsOf(worker: JobWorker, jobId: number): Promise<JobCommand[]> {
  const { rows } = await h.pool.query<{ payload: JobCommand }>(
    `SELECT payload FROM outbox WHERE subject = $1 AND (payload->>'job_id')::bigint = $2 ORDER BY seq`,
    [jobCommandSubject(worker), jobId],
  );
  return rows.map((r) => r.payload);
}

/** The settings the asset's newest processing job was handed out with (its first command). */
async function settingsOfJob(worker: JobWorker, id: string): Promise<unknown> {
  return (await commandsOf(worker, (await processingJob(id)).id))[0]?.settings;
}

/** The asset OK, as after its conversion job's report. */
async function processed(id: string): Promise<void> {
  const made = {
    id: randomUUID(),
    asset_id: id,
    group_id: String(GROUP),
    source_checksum: md5('f0'),
    image: { width: 4, height: 3 },
    conversions: {},
    errors: {},
  };
  expect(await applyJobReport(h.transactions, await finalReport(h, made), 'conversion')).toBe('processed');
}

describe('a processing job carries the settings its worker reads (issue 32)', () => {
  it('upload: the job and its command hold the image or video part of the settings, the same again when the lease sweep hands it out after a change', async () => {
    h.settings.set(String(GROUP), FIRST);
    const [image, video] = (await upload([{ contentType: 'image/png' }, { contentType: 'video/mp4' }])) as [string, string];
    const imageJob = await processingJob(image);
    expect(imageJob.params).toEqual({ settings: FIRST_IMAGE });
    expect(await commandsOf('conversion', imageJob.id)).toEqual([expect.objectContaining({ attempt: 0, settings: FIRST_IMAGE })]);
    expect(await settingsOfJob('transcode', video)).toEqual(FIRST_VIDEO);

    // The settings change; the image's worker goes quiet and the job is handed out again: as it was asked.
    h.settings.set(String(GROUP), SECOND);
    await h.pool.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [imageJob.id]);
    const logger = createLogger({ service: 'job-settings-test', level: 'silent' });
    expect(await sweepJobLeases(h.transactions, h.timings, logger)).toMatchObject({ handedOut: 1 });
    const handedOut = await commandsOf('conversion', imageJob.id);
    expect(handedOut.map((c) => c.attempt)).toEqual([0, 1]);
    expect(handedOut[1]?.settings).toEqual(FIRST_IMAGE);
  });

  it('process: a request takes the settings of now, with the specs of the keys it names', async () => {
    h.settings.set(String(GROUP), FIRST);
    const [id] = (await upload([{ contentType: 'image/png' }])) as [string];
    expect(await settingsOfJob('conversion', id)).toEqual(FIRST_IMAGE);
    await processed(id);

    h.settings.set(String(GROUP), SECOND);
    const res = await call('POST', `/api/v1/assets/${id}/process`, { keys: ['banner', 'smart_imaging'] });
    expect(res.status).toBe(202);
    const job = await processingJob(id);
    expect(job.params).toEqual({ keys: ['banner', 'smart_imaging'], settings: SECOND_IMAGE });
    expect((await commandsOf('conversion', job.id))[0]).toMatchObject({ keys: ['banner', 'smart_imaging'], settings: SECOND_IMAGE });
  });

  it('replace and undelete: the new job takes the settings of now', async () => {
    h.settings.set(String(GROUP), FIRST);
    const [id] = (await upload([{ contentType: 'image/png' }])) as [string];
    await processed(id);
    h.settings.set(String(GROUP), SECOND);

    const replaced = await signedFetch(`${h.url}/internal/v1/assets/${id}/original`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'g',
        size: 3,
        checksum: md5('g'),
        content_type: 'image/png',
        object_key: replacementKey(String(GROUP), id, '0123456789abcdef'),
        metadata: {},
      }),
    });
    expect(replaced.status).toBe(200);
    expect(await settingsOfJob('conversion', id)).toEqual(SECOND_IMAGE);

    h.settings.set(String(GROUP), FIRST);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).status).toBe(200);
    const before = (await processingJob(id)).id;
    expect((await call('POST', `/api/v1/assets/trash/${id}/undelete`, { keys: ['original'] })).status).toBe(200);
    const restored = await processingJob(id);
    expect(restored.id).toBeGreaterThan(before);
    expect(await settingsOfJob('conversion', id)).toEqual(FIRST_IMAGE);
  });

  it('ingest: the processing opened when the download ends takes the settings of then', async () => {
    h.settings.set(String(GROUP), FIRST);
    const id = assetId();
    expect((await call('POST', '/internal/v1/assets/ingest', { id, name: 'v.mp4', source: 'https://example.com/v.mp4' })).status).toBe(201);
    const { rows } = await h.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE $1 = ANY(asset_ids) AND type = 'ingest'`, [id]);
    const ingested: JobReport = {
      id: randomUUID(),
      job_id: Number(rows[0]?.id),
      attempt: 0,
      group_id: String(GROUP),
      asset_id: id,
      worker: 'upload@test:1',
      state: 'COMPLETED',
      step: 'download',
      progress: 100,
      ingested: { object_key: originalKey(String(GROUP), id), size: 3, checksum: md5('v'), content_type: 'video/mp4', metadata: {} },
    };
    // As main.ts wires it: the automatic addons' planner, which reads the group's settings.
    const autoAddons = autoAddonsPlanner(async (g) => h.settings.get(String(g)) ?? {});
    expect(await applyJobReport(h.transactions, ingested, 'upload', { autoAddons })).toBe('recorded');
    expect(await settingsOfJob('transcode', id)).toEqual(FIRST_VIDEO);
  });
});
