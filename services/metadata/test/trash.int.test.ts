/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS, connectNats, DAM_INTERNAL, FILE_DELETED, jobCommandSubject, serveAddonStatus } from '@dam/events';
import { conversionKey, conversionsPrefix, originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { assetId, collect, finalReport, principal, publishReport, signedFetch, startMetadata, type Harness, type Nats } from './harness';

let h: Harness;
let events: Awaited<ReturnType<typeof collect>>;
beforeAll(async () => {
  h = await startMetadata();
  events = await collect(h.nc, ASSET_EVENTS, 'assets.events.*.*');
});
afterAll(async () => {
  await events?.stop();
  await h?.stop();
});

const GROUP = 9;
const admin = principal({ group_id: GROUP, user_id: 1 });
const manager = principal({ group_id: GROUP, user_id: 2, role: 'MANAGER' });
const user = principal({ group_id: GROUP, user_id: 3, role: 'USER' });

/** An asset with its original in the bucket; an image also gets a stored `thumb` conversion and reaches OK. */
async function create(p = admin, contentType = 'text/plain', group = GROUP): Promise<{ id: string; bytes: Buffer; thumbKey?: string }> {
  const id = assetId();
  const bytes = Buffer.from(`original bytes of ${id}`);
  const checksum = createHash('md5').update(bytes).digest('hex');
  await h.storage.putBuffer(originalKey(String(group), id), bytes, { contentType });
  const res = await signedFetch(
    `${h.url}/internal/v1/assets`,
    { ...p, group_id: group },
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        files: [{ id, name: 'f.bin', size: bytes.length, checksum, content_type: contentType, object_key: originalKey(String(group), id), metadata: {} }],
      }),
    },
  );
  expect(res.status).toBe(201);
  if (!contentType.startsWith('image/')) return { id, bytes };
  const thumbKey = conversionKey(String(group), id, checksum, 'thumb', 'webp');
  await h.storage.putBuffer(thumbKey, Buffer.from('thumb'), { contentType: 'image/webp' });
  const made = { id: 'r', asset_id: id, group_id: String(group), source_checksum: checksum, image: { width: 2, height: 2 }, errors: {} };
  publishReport(
    h,
    await finalReport(h, { ...made, conversions: { thumb: { object_key: thumbKey, content_type: 'image/webp', width: 2, height: 2, size: 5 } } }),
  );
  await waitFor(async () => (await call('GET', `/api/v1/assets/${id}/data`, undefined, { ...p, group_id: group })).body.status === 'OK', {
    description: 'image OK',
  });
  return { id, bytes, thumbKey };
}

async function call(method: string, path: string, body?: unknown, p = admin): Promise<{ status: number; body: any; raw: Response }> {
  const res = await signedFetch(`${h.url}${path}`, p, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('application/json');
  return { status: res.status, body: json && text ? JSON.parse(text) : text, raw: res };
}

const deletionEvents = (id: string) => events.messages.filter((m) => m.payload.asset_id === id && /file-(un)?deleted$/.test(m.subject)).map((m) => m.payload);
const gone = (key: string) => waitFor(async () => (await h.storage.stat(key)) === null, { description: `${key} removed` });

describe('Delete (endpoint 6)', () => {
  it('removes the listed conversions and their bytes, ignores unknown keys, and raises file-deleted', async () => {
    const { id, thumbKey } = await create(admin, 'image/png');
    const res = await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['thumb', 'nope', '720p-video'] });
    expect(res).toMatchObject({ status: 200, body: { id, keys: ['thumb', 'nope', '720p-video'], status: 'OK' } });
    const data = await call('GET', `/api/v1/assets/${id}/data`);
    expect(data.body).toMatchObject({ status: 'OK', conversions: {} });
    await gone(thumbKey ?? '');
    expect(await h.storage.stat(originalKey(String(GROUP), id))).not.toBeNull();
    await waitFor(() => deletionEvents(id).length === 1, { description: 'file-deleted' });
    const [event] = deletionEvents(id);
    expect(FILE_DELETED.schema.parse({ ...event, type: 'file-deleted' })).toBeTruthy();
    expect(event.data).toEqual({ id, event: 'file-deleted', keys: ['thumb', 'nope', '720p-video'], status: 'OK', message: 'Deleted: thumb' });
  });

  it('trashes the original (404 ASSET_IN_TRASH everywhere), deletes every conversion, and Undelete restores it byte for byte', async () => {
    const { id, bytes, thumbKey } = await create(admin, 'image/png');
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).status).toBe(200);
    for (const path of [`/api/v1/assets/${id}/data`, `/api/v1/assets/${id}/content/original/download`, `/api/v1/assets/${id}/content/thumb/download`]) {
      const res = await call('GET', path);
      expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 404, code: 'ASSET_IN_TRASH' });
    }
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).body.error.code).toBe('ASSET_IN_TRASH');
    await gone(thumbKey ?? '');
    expect(await h.storage.stat(originalKey(String(GROUP), id))).not.toBeNull();
    // file-deleted goes out once the removal it queued is done.
    await waitFor(() => deletionEvents(id).length === 1, { description: 'file-deleted' });
    const [{ data: deleted }] = deletionEvents(id);
    expect(deleted).toMatchObject({ id, event: 'file-deleted', keys: ['original'], status: 'OK' });
    expect(deletionEvents(id)[0]).not.toHaveProperty('asset');

    const commands = await collect(h.nc, DAM_INTERNAL, jobCommandSubject('conversion'));
    const restored = await call('POST', `/api/v1/assets/trash/${id}/undelete`, { keys: ['original'] });
    expect(restored).toMatchObject({ status: 200, body: { id, keys: ['original'], status: 'OK' } });
    expect((await call('GET', `/api/v1/assets/${id}/data`)).body.status).toBe('OK');
    // The profile's conversions are made again: a new processing job with its command.
    await waitFor(() => commands.messages.some((m) => m.payload.asset_id === id), { description: 'conversion command after undelete' });
    await commands.stop();
    await waitFor(() => deletionEvents(id).length === 2, { description: 'file-undeleted' });
    expect(deletionEvents(id)[1]?.data).toMatchObject({ id, event: 'file-undeleted', keys: ['original'], status: 'OK' });
    const again = await signedFetch(`${h.url}/api/v1/assets/${id}/content/original/download`, admin);
    expect(Buffer.from(await again.arrayBuffer())).toEqual(bytes);
  });

  it('removes the outputs a worker still busy with a trashed asset wrote after the trash deleted its conversions', async () => {
    // An image still processing: its job is open when the asset goes to the trash. A group of its own, so the purge
    // below finds only its own assets in the trash.
    const group = String(GROUP + 30);
    const owner = principal({ group_id: GROUP + 30, user_id: 1 });
    const id = assetId();
    const bytes = Buffer.from(`original bytes of ${id}`);
    const checksum = createHash('md5').update(bytes).digest('hex');
    await h.storage.putBuffer(originalKey(group, id), bytes, { contentType: 'image/png' });
    const file = { id, name: 'late.png', size: bytes.length, checksum, content_type: 'image/png', object_key: originalKey(group, id), metadata: {} };
    const created = await signedFetch(`${h.url}/internal/v1/assets`, owner, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ files: [file] }),
    });
    expect(created.status).toBe(201);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] }, owner)).status).toBe(200);
    // The trash's own deletion of the (still empty) outputs prefix has run.
    const queued = async () => (await h.pool.query('SELECT 1 FROM object_deletions WHERE starts_with(key, $1)', [conversionsPrefix(group, id)])).rowCount;
    await waitFor(async () => (await queued()) === 0, { description: "the trash's deletions done" });

    // The worker that had taken the job finishes now: its thumbnail lands in the bucket, then its report.
    const thumbKey = conversionKey(group, id, checksum, 'thumb', 'webp');
    await h.storage.putBuffer(thumbKey, Buffer.from('thumb'), { contentType: 'image/webp' });
    const made = { id: 'r', asset_id: id, group_id: group, source_checksum: checksum, image: { width: 2, height: 2 }, errors: {} };
    publishReport(
      h,
      await finalReport(h, { ...made, conversions: { thumb: { object_key: thumbKey, content_type: 'image/webp', width: 2, height: 2, size: 5 } } }),
    );

    await gone(thumbKey);
    expect(await h.storage.stat(originalKey(group, id))).not.toBeNull();
    expect((await call('GET', `/api/v1/assets/${id}/data`, undefined, owner)).body.error.code).toBe('ASSET_IN_TRASH');
  });

  it("answers 400 for a bad body, 404 for unknown and foreign ids, 403 for a USER on another's asset, 409 undeleting a live asset", async () => {
    const { id } = await create(admin);
    for (const body of [{}, { keys: [] }, { keys: 'original' }, { keys: [1] }]) {
      const res = await call('POST', `/api/v1/assets/${id}/delete`, body);
      expect({ body, status: res.status, code: res.body.error.code }).toEqual({ body, status: 400, code: 'VALIDATION_FAILED' });
    }
    expect((await call('POST', `/api/v1/assets/${'0'.repeat(32)}/delete`, { keys: ['original'] })).status).toBe(404);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] }, principal({ group_id: GROUP + 1 }))).body.error.code).toBe(
      'ASSET_NOT_FOUND',
    );
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] }, user)).status).toBe(403);
    expect((await call('POST', `/api/v1/assets/trash/${id}/undelete`, { keys: ['original'] })).status).toBe(409);
    const own = await create(user);
    expect((await call('POST', `/api/v1/assets/${own.id}/delete`, { keys: ['original'] }, user)).status).toBe(200);
    for (const keys of [['thumb'], ['original', 'thumb'], ['*']]) {
      expect((await call('POST', `/api/v1/assets/trash/${own.id}/undelete`, { keys }, user)).status).toBe(400);
    }
    expect((await call('POST', `/api/v1/assets/trash/${own.id}/undelete`, { keys: ['original'] }, user)).status).toBe(200);
  });
});

describe('Delete of addon keys (CONTRACT §16)', () => {
  let addonService: Nats;
  let replies: { unsubscribe(): void };
  beforeAll(async () => {
    // Answers as the addon service that every model is ready, so a run is not kept waiting for its status.
    addonService = await connectNats(h.nats.url, 'addon', h.nats.seed('addon'));
    replies = serveAddonStatus(addonService, () => ({}));
    await addonService.flush();
  });
  afterAll(async () => {
    replies?.unsubscribe();
    await addonService?.close();
  });

  const tags = { labels: [{ label: 'cup', confidence: 0.8 }], best_guess: ['cup'] };
  const faces = { faces: [{ box: { x: 1, y: 2, width: 3, height: 4 }, confidence: 0.9, person_id: 'person_1' }] };

  /** Runs `addon` on the asset as a client would, and reports `result` as the addon worker would; background_removal's PNG lands in the bucket. */
  async function runAddon(asset: { id: string; bytes: Buffer }, addon: string, result: Record<string, unknown>): Promise<string | undefined> {
    const run = await call('POST', `/api/v1/assets/${asset.id}/addons/${addon}`, {});
    expect(run.status).toBe(202);
    const checksum = createHash('md5').update(asset.bytes).digest('hex');
    const conversions: Record<string, { object_key: string; content_type: string; width: number; height: number; size: number }> = {};
    if (addon === 'background_removal') {
      const key = conversionKey(String(GROUP), asset.id, checksum, addon, 'png');
      await h.storage.putBuffer(key, Buffer.from('png'), { contentType: 'image/png' });
      conversions[addon] = { object_key: key, content_type: 'image/png', width: 2, height: 2, size: 3 };
    }
    const made = { id: 'r', asset_id: asset.id, group_id: String(GROUP), source_checksum: checksum, image: { width: 2, height: 2 }, conversions, errors: {} };
    publishReport(h, await finalReport(h, made, { worker: 'addon@test:1', step: addon, addon_result: { addon, result } }));
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', { description: `the ${addon} job` });
    return conversions[addon]?.object_key;
  }
  const addonResult = (id: string, addon: string) => call('GET', `/api/v1/assets/${id}/addons/${addon}`);

  it('removes addon results with conversions in one call: rows, objects, Get Data, 404 on the result, file-deleted naming the keys', async () => {
    const asset = await create(admin, 'image/png');
    await runAddon(asset, 'auto_tagging', tags);
    const png = await runAddon(asset, 'background_removal', { key: 'background_removal', width: 2, height: 2, size: 3 });
    await runAddon(asset, 'face_recognition', faces);
    expect((await call('GET', `/api/v1/assets/${asset.id}/data`)).body.addons_info).toEqual({
      auto_tagging: { available: true },
      background_removal: { available: true },
      face_recognition: { available: true },
    });

    const keys = ['thumb', 'auto_tagging', 'background_removal', 'text_extraction', 'nope'];
    expect(await call('POST', `/api/v1/assets/${asset.id}/delete`, { keys })).toMatchObject({ status: 200, body: { id: asset.id, keys, status: 'OK' } });

    const data = (await call('GET', `/api/v1/assets/${asset.id}/data`)).body;
    expect(data).toMatchObject({ status: 'OK', conversions: {}, addons_info: { face_recognition: { available: true } } });
    expect(Object.keys(data.addons_info)).toEqual(['face_recognition']);
    for (const addon of ['auto_tagging', 'background_removal']) {
      const res = await addonResult(asset.id, addon);
      expect({ addon, status: res.status, body: res.body }).toEqual({
        addon,
        status: 404,
        body: { error: { code: 'ADDON_RESULT_NOT_FOUND', message: `The ${addon} addon has not run on this asset` } },
      });
    }
    expect((await addonResult(asset.id, 'face_recognition')).body).toEqual(faces);
    const { rows } = await h.pool.query<{ addon_results: Record<string, unknown> }>('SELECT addon_results FROM assets WHERE id = $1', [asset.id]);
    expect(Object.keys(rows[0]?.addon_results ?? {})).toEqual(['face_recognition']);
    // background_removal's PNG goes through the deletion queue, as every conversion's bytes do.
    await gone(png ?? '');
    await gone(asset.thumbKey ?? '');
    await waitFor(() => deletionEvents(asset.id).length === 1, { description: 'file-deleted' });
    const [event] = deletionEvents(asset.id);
    expect(FILE_DELETED.schema.parse({ ...event, type: 'file-deleted' })).toBeTruthy();
    expect(event.data).toEqual({ id: asset.id, event: 'file-deleted', keys, status: 'OK', message: 'Deleted: thumb, background_removal, auto_tagging' });
    // The asset stays live: the event carries it as it now is (search drops the tags with it), no tag left.
    expect(event.asset).toEqual(data);
    expect(event.addon_terms).toEqual({ labels: [], words: [] });
  });

  it('ignores an addon key without a result as a conversion key without output; the tags lose has-faces with the faces; `*` keeps the tags', async () => {
    const asset = await create(admin, 'image/png');
    await runAddon(asset, 'face_recognition', faces);
    await runAddon(asset, 'auto_tagging', tags);
    expect((await addonResult(asset.id, 'auto_tagging')).body.labels).toContainEqual({ label: 'has-faces', confidence: 1 });

    expect((await call('POST', `/api/v1/assets/${asset.id}/delete`, { keys: ['face_recognition'] })).status).toBe(200);
    expect((await addonResult(asset.id, 'face_recognition')).status).toBe(404);
    expect((await addonResult(asset.id, 'auto_tagging')).body).toEqual(tags);
    const before = (await call('GET', `/api/v1/assets/${asset.id}/data`)).body;

    // Again: nothing of it is left, so nothing changes, and file-deleted still says what was asked.
    expect(await call('POST', `/api/v1/assets/${asset.id}/delete`, { keys: ['face_recognition', 'storyboard'] })).toMatchObject({
      status: 200,
      body: { status: 'OK' },
    });
    expect((await call('GET', `/api/v1/assets/${asset.id}/data`)).body).toEqual(before);
    await waitFor(() => deletionEvents(asset.id).length === 2, { description: 'two file-deleted' });
    expect(deletionEvents(asset.id).map((e) => [e.data.keys, e.data.message])).toEqual([
      [['face_recognition'], 'Deleted: face_recognition'],
      [['face_recognition', 'storyboard'], 'Nothing to delete: no listed key applies to the asset'],
    ]);

    // `*` is every conversion: background_removal's goes with its entry in addons_info; the tags are no conversion.
    await runAddon(asset, 'background_removal', { key: 'background_removal', width: 2, height: 2, size: 3 });
    expect((await call('POST', `/api/v1/assets/${asset.id}/delete`, { keys: ['*'] })).status).toBe(200);
    const after = (await call('GET', `/api/v1/assets/${asset.id}/data`)).body;
    expect({ conversions: after.conversions, addons_info: after.addons_info }).toEqual({ conversions: {}, addons_info: { auto_tagging: { available: true } } });
    expect((await addonResult(asset.id, 'background_removal')).status).toBe(404);
    expect((await addonResult(asset.id, 'auto_tagging')).body).toEqual(tags);
  });
});

describe('Purge Deleted Assets (endpoint 9)', () => {
  it('is for PURGE_TRASH only, and removes the trashed assets of the group for good, with their bytes', async () => {
    expect((await call('DELETE', '/api/v1/assets/trash/purge', undefined, manager)).status).toBe(403);
    const trashed = [await create(admin, 'image/png'), await create(admin)];
    const kept = await create(admin);
    const foreign = await create(principal({ group_id: GROUP + 5 }), 'text/plain', GROUP + 5);
    for (const a of trashed) expect((await call('POST', `/api/v1/assets/${a.id}/delete`, { keys: ['original'] })).status).toBe(200);
    const other = principal({ group_id: GROUP + 5 });
    expect((await call('POST', `/api/v1/assets/${foreign.id}/delete`, { keys: ['original'] }, other)).status).toBe(200);
    const before = await h.storage.listKeys('');
    for (const a of trashed) expect(before).toContain(originalKey(String(GROUP), a.id));

    const res = await call('DELETE', '/api/v1/assets/trash/purge');
    expect(res).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${res.body.job_id}`)).body.status === 'COMPLETED', { description: 'purge done' });
    const job = (await call('GET', `/api/v1/jobs/${res.body.job_id}`)).body;
    expect(job).toMatchObject({ type: 'purge', progress: 100, steps: [{ name: 'purge', status: 'COMPLETED' }] });
    expect([...job.asset_ids].sort()).toEqual(trashed.map((a) => a.id).sort());

    for (const a of trashed) {
      expect((await call('POST', `/api/v1/assets/trash/${a.id}/undelete`, { keys: ['original'] })).status).toBe(404);
      await gone(originalKey(String(GROUP), a.id));
    }
    const after = await h.storage.listKeys('');
    // Only the purged assets' objects went; the live asset and the other group's trash are untouched.
    expect(before.filter((k) => !after.includes(k)).every((k) => trashed.some((a) => k.includes(a.id)))).toBe(true);
    expect(after.some((k) => trashed.some((a) => k.includes(a.id)))).toBe(false);
    expect((await call('GET', `/api/v1/assets/${kept.id}/data`)).status).toBe(200);
    expect((await call('POST', `/api/v1/assets/trash/${foreign.id}/undelete`, { keys: ['original'] }, other)).status).toBe(200);
  });
});

describe('Delete - Bulk (endpoint 7)', () => {
  it('trashes the assets uploaded in the range, oldest first up to max_assets, one file-deleted each', async () => {
    const group = GROUP + 20;
    const boss = principal({ group_id: group, user_id: 1 });
    h.settings.set(String(group), { bulk_delete: { max_assets: 3, max_range_days: 10 } });
    const inside: string[] = [];
    for (let i = 0; i < 5; i++) inside.push((await create(boss, 'text/plain', group)).id);
    const outside = [(await create(boss, 'text/plain', group)).id, (await create(boss, 'text/plain', group)).id];
    // Upload times: inside on 2026-03-01 .. 03-05, outside a month before and after.
    for (const [i, id] of inside.entries()) await h.pool.query(`UPDATE assets SET upload_time = $2 WHERE id = $1`, [id, `2026-03-0${i + 1}T12:00:00Z`]);
    await h.pool.query(`UPDATE assets SET upload_time = '2026-02-01T00:00:00Z' WHERE id = $1`, [outside[0]]);
    await h.pool.query(`UPDATE assets SET upload_time = '2026-04-01T00:00:00Z' WHERE id = $1`, [outside[1]]);

    const tooLong = await call('POST', '/api/v1/assets/bulk/delete', { start_time: '2026-01-01T00:00:00Z', end_time: '2026-03-01T00:00:00Z' }, boss);
    expect(tooLong).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect((await call('POST', '/api/v1/assets/bulk/delete', { start_time: 'yesterday', end_time: '2026-03-01' }, boss)).status).toBe(400);
    expect((await call('POST', '/api/v1/assets/bulk/delete', { start_time: '2026-03-05', end_time: '2026-03-01' }, boss)).status).toBe(400);

    const range = { start_time: '2026-03-01T00:00:00Z', end_time: '2026-03-06T00:00:00+00:00' };
    const first = await call('POST', '/api/v1/assets/bulk/delete', range, boss);
    expect(first).toMatchObject({ status: 200, body: { status: 'QUEUED', job_id: expect.any(Number), message: expect.stringMatching(/3 of 5.*2 remain/) } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${first.body.job_id}`, undefined, boss)).body.status === 'COMPLETED', {
      description: 'first bulk job',
    });
    const status = async (id: string) => (await call('GET', `/api/v1/assets/${id}/data`, undefined, boss)).body;
    expect((await status(inside[0] ?? '')).error?.code).toBe('ASSET_IN_TRASH');
    expect((await status(inside[2] ?? '')).error?.code).toBe('ASSET_IN_TRASH');
    expect((await status(inside[3] ?? '')).status).toBe('OK');

    const second = await call('POST', '/api/v1/assets/bulk/delete', range, boss);
    expect(second.body.message).toMatch(/^2 assets queued/);
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${second.body.job_id}`, undefined, boss)).body.status === 'COMPLETED', {
      description: 'second bulk job',
    });
    for (const id of inside) expect((await status(id)).error?.code).toBe('ASSET_IN_TRASH');
    for (const id of outside) expect((await status(id)).status).toBe('OK');
    await waitFor(() => inside.every((id) => deletionEvents(id).length === 1), { description: 'file-deleted per asset' });
    expect(inside.map((id) => deletionEvents(id)[0]?.data.keys)).toEqual(inside.map(() => ['original']));
    for (const id of outside) expect(deletionEvents(id)).toEqual([]);
  });
});
