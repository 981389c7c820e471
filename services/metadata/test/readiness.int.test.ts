/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomUUID } from 'node:crypto';
import { connectNats, serveAddonStatus, type AddonState, type JobReport } from '@dam/events';
import { conversionKey, originalKey } from '@dam/storage';
import { unavailable } from '@dam/errors';
import { scaled, waitFor } from '@dam/testing';
import { autoAddonsPlanner } from '../src/use-cases/addons.use-case';
import { applyJobReport } from '../src/use-cases/apply-job-report.use-case';
import type { JobStore, RunInTransaction } from '../src/domain/ports';
import { assetId, principal, publishReport, signedFetch, startMetadata, type Harness, type Nats, registerAsset } from './harness';

/**
 * CONTRACT §16: an asset leaves NOT_READY only when its profile's conversions and its automatic addons' results exist;
 * `file-processed` once, after all of them; a failed automatic addon makes it ERROR with the addon in `errors`; an
 * addon whose model is not available is not run and shows `addons_info.<addon>.available: false`.
 */
let h: Harness;
let addonService: Nats;
let addonStates: Record<string, AddonState> = {};
beforeAll(async () => {
  h = await startMetadata();
  h.settings.set(String(GROUP), { addons: { auto: { image: ['auto_tagging', 'text_extraction'] } } });
  // The test plays the addon service's answer about its models.
  addonService = await connectNats(h.nats.url, 'addon', h.nats.seed('addon'));
  serveAddonStatus(addonService, () => addonStates);
  await addonService.flush();
});
beforeEach(() => {
  addonStates = { auto_tagging: { state: 'ready' }, text_extraction: { state: 'ready' }, background_removal: { state: 'ready' } };
});
afterAll(async () => {
  await addonService?.close();
  await h?.stop();
});

const GROUP = 31;
const admin = principal({ group_id: GROUP, user_id: 1 });
const checksum = createHash('md5').update('readiness').digest('hex');

const create = (): Promise<string> => registerAsset(h, admin, { name: 'p.png', checksum });

const data = async (id: string) => (await (await signedFetch(`${h.url}/api/v1/assets/${id}/data`, admin)).json()) as any;
const statusOf = async (id: string) => (await h.pool.query<{ status: string }>('SELECT status FROM assets WHERE id = $1', [id])).rows[0]?.status;

/** The asset's jobs: the processing job and each addon's, by addon. */
async function jobsOf(id: string): Promise<{ processing: number; addons: Record<string, number> }> {
  const { rows } = await h.pool.query<{ id: string; type: string; params: { keys?: string[] } }>(
    'SELECT id, type, params FROM jobs WHERE $1 = ANY(asset_ids) ORDER BY id',
    [id],
  );
  const processing = rows.find((r) => r.type === 'processing');
  if (!processing) throw new Error(`asset ${id} has no processing job`);
  return {
    processing: Number(processing.id),
    addons: Object.fromEntries(rows.filter((r) => r.type === 'addon').map((r) => [r.params.keys?.[0] ?? '', Number(r.id)])),
  };
}

/** The file-processed envelopes the outbox holds for the asset (what subscribers will hear). */
async function fileProcessed(id: string): Promise<any[]> {
  const { rows } = await h.pool.query<{ payload: any }>(`SELECT payload FROM outbox WHERE subject = $1 AND payload->>'asset_id' = $2 ORDER BY seq`, [
    `assets.events.${GROUP}.file-processed`,
    id,
  ]);
  return rows.map((r) => r.payload);
}

const conversionReport = (id: string, jobId: number, state: 'COMPLETED' | 'FAILED' = 'COMPLETED'): JobReport => ({
  id: randomUUID(),
  job_id: jobId,
  attempt: 0,
  group_id: String(GROUP),
  asset_id: id,
  worker: 'conversion@test:1',
  state,
  step: 'conversions',
  progress: 100,
  conversions: {
    id: 'r',
    asset_id: id,
    group_id: String(GROUP),
    source_checksum: checksum,
    image: { width: 10, height: 10 },
    conversions:
      state === 'COMPLETED'
        ? { thumb: { object_key: conversionKey(String(GROUP), id, checksum, 'thumb', 'webp'), content_type: 'image/webp', width: 10, height: 10, size: 10 } }
        : {},
    errors: state === 'COMPLETED' ? {} : { thumb: 'the image cannot be read' },
  },
});

const addonReport = (id: string, jobId: number, addon: string, failure?: string): JobReport => ({
  id: randomUUID(),
  job_id: jobId,
  attempt: 0,
  group_id: String(GROUP),
  asset_id: id,
  worker: 'addon@test:1',
  state: failure ? 'FAILED' : 'COMPLETED',
  step: addon,
  progress: 100,
  ...(failure
    ? { error: failure }
    : {
        addon_result: {
          addon,
          result: addon === 'text_extraction' ? { text: 'hello', words: ['hello'] } : { labels: [{ label: 'cup', confidence: 0.9 }], best_guess: ['cup'] },
        },
      }),
});

/** Transactions that wait after ending a job until `parties` of them have (at most `waitMs`), then go on. */
function overlapping(run: RunInTransaction, parties: number, waitMs = scaled(100)): RunInTransaction {
  let arrived = 0;
  let release = (): void => undefined;
  const all = new Promise<void>((resolve) => (release = resolve));
  return (fn) =>
    run((tx) => {
      const finish: JobStore['finish'] = async (...args) => {
        const ended = await tx.jobs.finish(...args);
        if (++arrived >= parties) release();
        await Promise.race([all, new Promise((resolve) => setTimeout(resolve, waitMs))]);
        return ended;
      };
      const jobs = new Proxy(tx.jobs, { get: (target, key) => (key === 'finish' ? finish : (Reflect.get(target, key) as unknown)) });
      return fn({ ...tx, jobs });
    });
}

describe('an asset is OK only when its automatic addons are done too (CONTRACT §16)', () => {
  it('opens the addon jobs with the conversion job, stays NOT_READY until the last ends, then one file-processed with everything', async () => {
    const id = await create();
    const jobs = await jobsOf(id);
    expect(Object.keys(jobs.addons).sort()).toEqual(['auto_tagging', 'text_extraction']);

    publishReport(h, conversionReport(id, jobs.processing));
    await waitFor(async () => (await data(id)).conversions.thumb !== undefined, { description: 'the conversion recorded' });
    publishReport(h, addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging'));
    await waitFor(async () => (await data(id)).addons_info.auto_tagging?.available, { description: 'the tagging recorded' });
    expect(await statusOf(id)).toBe('NOT_READY');
    expect(await fileProcessed(id)).toEqual([]);

    publishReport(h, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction'));
    await waitFor(async () => (await statusOf(id)) === 'OK', { description: 'OK' });
    const events = await fileProcessed(id);
    expect(events).toHaveLength(1);
    // The one event carries everything the round made.
    expect(events[0].data).toMatchObject({
      status: 'OK',
      conversions: { thumb: expect.any(Object) },
      addons_info: { auto_tagging: { available: true }, text_extraction: { available: true } },
    });
    expect(events[0].addon_terms).toEqual({ labels: expect.arrayContaining(['cup']), words: ['hello'] });
    // No addon-processed for what was part of the round: file-processed announces it.
    const { rows } = await h.pool.query(`SELECT 1 FROM outbox WHERE subject = $1 AND payload->>'asset_id' = $2`, [
      `assets.events.${GROUP}.addon-processed`,
      id,
    ]);
    expect(rows).toHaveLength(0);
    expect((await signedFetch(`${h.url}/api/v1/assets/${id}/addons/text_extraction`, admin).then((r) => r.json())) as any).toEqual({
      text: 'hello',
      words: ['hello'],
    });
  });

  it("settles exactly once when the last two jobs' reports are applied at the same moment", async () => {
    for (let round = 0; round < 3; round++) {
      const id = await create();
      const jobs = await jobsOf(id);
      expect(Object.keys(jobs.addons)).toHaveLength(2);
      expect(await applyJobReport(h.transactions, addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging'), 'addon')).toBe('recorded');
      expect(await statusOf(id)).toBe('NOT_READY');
      // Each transaction, once it has ended its job, waits for the other to end its own too (or a while, when the
      // asset's lock keeps the other from getting there): without that lock both would see the other job still open.
      const both = overlapping(h.transactions, 2);
      const outcomes = await Promise.all([
        applyJobReport(both, conversionReport(id, jobs.processing), 'conversion'),
        applyJobReport(both, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction'), 'addon'),
      ]);
      expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
      expect(await statusOf(id)).toBe('OK');
      expect(await fileProcessed(id)).toHaveLength(1);
    }
  });

  it('a failed automatic addon makes the asset ERROR with the addon and its reason, once the conversion has ended too', async () => {
    const id = await create();
    const jobs = await jobsOf(id);
    await applyJobReport(
      h.transactions,
      addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging', 'the auto_tagging model could not load: out of memory'),
      'addon',
    );
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction'), 'addon');
    // The conversion still runs: the asset waits for it (its outputs belong in the one event).
    expect(await statusOf(id)).toBe('NOT_READY');
    expect(await fileProcessed(id)).toEqual([]);
    await applyJobReport(h.transactions, conversionReport(id, jobs.processing), 'conversion');
    const asset = await data(id);
    expect(asset.status).toBe('ERROR');
    expect(asset.errors).toEqual({ auto_tagging: 'the auto_tagging model could not load: out of memory' });
    expect(asset.conversions.thumb).toBeDefined();
    const events = await fileProcessed(id);
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ status: 'ERROR', errors: { auto_tagging: expect.stringContaining('could not load') } });
  });

  it('a failed conversion and a failed addon are both in errors', async () => {
    const id = await create();
    const jobs = await jobsOf(id);
    await applyJobReport(h.transactions, conversionReport(id, jobs.processing, 'FAILED'), 'conversion');
    expect(await statusOf(id)).toBe('NOT_READY');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging', 'the image cannot be read'), 'addon');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction', 'the image cannot be read'), 'addon');
    expect((await data(id)).errors).toEqual({
      thumb: 'the image cannot be read',
      auto_tagging: 'the image cannot be read',
      text_extraction: 'the image cannot be read',
    });
    expect(await fileProcessed(id)).toHaveLength(1);
  });

  it('does not run an addon whose model is not available: no job, available false, OK after the conversion', async () => {
    addonStates = { auto_tagging: { state: 'failed', reason: 'the auto_tagging model could not load: no such file' }, text_extraction: { state: 'loading' } };
    const id = await create();
    const jobs = await jobsOf(id);
    // One still loading runs once it has loaded; the failed one is not run at all.
    expect(Object.keys(jobs.addons)).toEqual(['text_extraction']);
    expect((await data(id)).addons_info).toEqual({ auto_tagging: { available: false } });
    await applyJobReport(h.transactions, conversionReport(id, jobs.processing), 'conversion');
    expect(await statusOf(id)).toBe('NOT_READY');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction'), 'addon');
    const asset = await data(id);
    expect(asset.status).toBe('OK');
    expect(asset.addons_info).toEqual({ auto_tagging: { available: false }, text_extraction: { available: true } });
    expect(await fileProcessed(id)).toHaveLength(1);
  });

  it('an automatic addon that ends after its asset went to the trash announces nothing', async () => {
    const id = await create();
    const jobs = await jobsOf(id);
    const trashed = await signedFetch(`${h.url}/api/v1/assets/${id}/delete`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: ['original'] }),
    });
    expect(trashed.status).toBe(200);
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging'), 'addon');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction', 'the image cannot be read'), 'addon');
    expect(await fileProcessed(id)).toEqual([]);
    expect(await statusOf(id)).toBe('NOT_READY');
  });

  it('an ingested image opens its automatic addons with its processing when the download ends', async () => {
    const id = assetId();
    const res = await signedFetch(`${h.url}/internal/v1/assets/ingest`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: 'i.png', source: 'https://example.com/i.png' }),
    });
    expect(res.status).toBe(201);
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
      ingested: { object_key: originalKey(String(GROUP), id), size: 3, checksum, content_type: 'image/png', metadata: {} },
    };
    const autoAddons = autoAddonsPlanner(async (g) => h.settings.get(String(g)) ?? {});
    expect(await applyJobReport(h.transactions, ingested, 'upload', { autoAddons })).toBe('recorded');
    const jobs = await jobsOf(id);
    expect(Object.keys(jobs.addons).sort()).toEqual(['auto_tagging', 'text_extraction']);
    await applyJobReport(h.transactions, conversionReport(id, jobs.processing), 'conversion');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.auto_tagging as number, 'auto_tagging'), 'addon');
    expect(await statusOf(id)).toBe('NOT_READY');
    await applyJobReport(h.transactions, addonReport(id, jobs.addons.text_extraction as number, 'text_extraction'), 'addon');
    expect(await statusOf(id)).toBe('OK');
    expect(await fileProcessed(id)).toHaveLength(1);
  });

  it("replace: the open addon job of the old original ends, the new original's addons hold the asset again", async () => {
    const id = await create();
    const first = await jobsOf(id);
    await applyJobReport(h.transactions, conversionReport(id, first.processing), 'conversion');
    const replaced = await signedFetch(`${h.url}/internal/v1/assets/${id}/original`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'p2.png', size: 3, checksum, content_type: 'image/png', object_key: originalKey(String(GROUP), id), metadata: {} }),
    });
    expect(replaced.status).toBe(200);
    const { rows } = await h.pool.query<{ id: string; status: string }>('SELECT id, status FROM jobs WHERE id = ANY($1)', [Object.values(first.addons)]);
    expect(rows.map((r) => r.status)).toEqual(['ERROR', 'ERROR']);
    // The old original's addon reports come too late: they change nothing.
    expect(await applyJobReport(h.transactions, addonReport(id, first.addons.auto_tagging as number, 'auto_tagging'), 'addon')).toBe('job-ended');
    const { rows: second } = await h.pool.query<{ id: string; type: string; params: { keys?: string[] } }>(
      `SELECT id, type, params FROM jobs WHERE $1 = ANY(asset_ids) AND status = 'QUEUED' ORDER BY id`,
      [id],
    );
    expect(second.map((j) => j.params.keys?.[0] ?? j.type)).toEqual(['processing', 'auto_tagging', 'text_extraction']);
    for (const j of second) {
      const report = j.type === 'processing' ? conversionReport(id, Number(j.id)) : addonReport(id, Number(j.id), j.params.keys?.[0] as string);
      expect(await statusOf(id)).toBe('NOT_READY');
      await applyJobReport(h.transactions, report, j.type === 'processing' ? 'conversion' : 'addon');
    }
    expect(await statusOf(id)).toBe('OK');
    // One file-processed per round: the first original's (never, it was replaced while NOT_READY) and the new one's.
    expect(await fileProcessed(id)).toHaveLength(1);
  });

  it('takes an image while auth cannot answer for the settings, and opens its automatic addons when its conversion reports', async () => {
    h.settingsDown.add(String(GROUP));
    let id: string;
    try {
      id = await create(); // 503 before: an upload refused because the settings could not be read
    } finally {
      h.settingsDown.delete(String(GROUP));
    }
    const { processing, addons } = await jobsOf(id);
    expect(addons).toEqual({});
    expect((await h.pool.query('SELECT params FROM jobs WHERE id = $1', [processing])).rows[0].params).toMatchObject({ autoAddonsDeferred: true });
    const settingsOf = async (groupId: number) => {
      if (h.settingsDown.has(String(groupId))) throw unavailable('auth is unreachable', 'SETTINGS_UNAVAILABLE');
      return h.settings.get(String(groupId)) ?? {};
    };
    const deps = { autoAddons: autoAddonsPlanner(settingsOf, async () => undefined) };
    const report = conversionReport(id, processing);
    // The conversion ends while auth is still away: the report is not applied (the consumer retries it), never settled without the addons.
    h.settingsDown.add(String(GROUP));
    await expect(applyJobReport(h.transactions, report, 'conversion', deps)).rejects.toMatchObject({ code: 'SETTINGS_UNAVAILABLE' });
    expect(await statusOf(id)).toBe('NOT_READY');
    h.settingsDown.delete(String(GROUP));
    // Applied again once auth answers: the addons open before the asset may settle.
    expect(await applyJobReport(h.transactions, report, 'conversion', deps)).toBe('recorded');
    const opened = (await jobsOf(id)).addons;
    expect(Object.keys(opened).sort()).toEqual(['auto_tagging', 'text_extraction']);
    expect(await statusOf(id)).toBe('NOT_READY');
    for (const [addon, jobId] of Object.entries(opened)) await applyJobReport(h.transactions, addonReport(id, jobId, addon), 'addon');
    expect(await statusOf(id)).toBe('OK');
    expect(await fileProcessed(id)).toHaveLength(1);
  });
});
