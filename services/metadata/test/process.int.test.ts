/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS, connectNats, DAM_INTERNAL, jobCommandSubject, serveAddonStatus } from '@dam/events';
import { conversionKey, originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { assetId, collect, finalReport, outputsOf, principal, publishReport, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
  h.settings.set(String(GROUP), { conversions: { custom: { banner: { width: 600, height: 200 } } } });
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 23;
const admin = principal({ group_id: GROUP, user_id: 1 });
const checksum = createHash('md5').update('img').digest('hex');

async function create(contentType: string, owner = admin): Promise<string> {
  const id = assetId();
  const res = await signedFetch(`${h.url}/internal/v1/assets`, owner, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [{ id, name: 'i.png', size: 3, checksum, content_type: contentType, object_key: originalKey(String(GROUP), id), metadata: {} }],
    }),
  });
  expect(res.status).toBe(201);
  return id;
}

const output = (id: string, key: string) => ({
  object_key: conversionKey(String(GROUP), id, checksum, key, 'webp'),
  content_type: 'image/webp',
  width: 10,
  height: 10,
  size: 10,
});
const made = (id: string, conversions: Record<string, ReturnType<typeof output>>) => ({
  id: 'r',
  asset_id: id,
  group_id: String(GROUP),
  source_checksum: checksum,
  image: { width: 10, height: 10 },
  conversions,
  errors: {},
});
const call = async (path: string, body: unknown, p = admin) => {
  const res = await signedFetch(`${h.url}${path}`, p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};
const data = async (id: string) => (await (await signedFetch(`${h.url}/api/v1/assets/${id}/data`, admin)).json()) as any;

describe('POST /api/v1/assets/{id}/process (CONTRACT §6)', () => {
  it('runs the named keys as a job, records them, marks ON_DEMAND_IMAGE and raises file-processed', async () => {
    const id = await create('image/png');
    expect((await call(`/api/v1/assets/${id}/process`, { keys: ['banner'] })).body.error.code).toBe('ASSET_NOT_READY');
    publishReport(h, await finalReport(h, made(id, { thumb: output(id, 'thumb') })));
    await waitFor(async () => (await data(id)).status === 'OK', { description: 'OK' });
    expect((await data(id)).addons_info).toEqual({});

    const commands = await collect(h.nc, DAM_INTERNAL, jobCommandSubject('conversion'));
    const events = await collect(h.nc, ASSET_EVENTS, `assets.events.${GROUP}.file-processed`);
    const res = await call(`/api/v1/assets/${id}/process`, { keys: ['banner', 'smart_imaging'] });
    expect(res).toEqual({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(() => commands.messages.some((m) => m.payload.job_id === res.body.job_id), { description: 'command' });
    expect(commands.messages.find((m) => m.payload.job_id === res.body.job_id)?.payload.keys).toEqual(['banner', 'smart_imaging']);

    publishReport(h, await finalReport(h, made(id, { banner: output(id, 'banner'), smart_imaging: output(id, 'smart_imaging') })));
    await waitFor(async () => (await data(id)).conversions.banner !== undefined, { description: 'banner recorded' });
    const after = await data(id);
    expect(Object.keys(after.conversions).sort()).toEqual(['banner', 'smart_imaging', 'thumb']);
    expect(after.addons_info).toEqual({ ON_DEMAND_IMAGE: { available: true } });
    await waitFor(() => events.messages.some((m) => m.payload.asset_id === id && m.payload.data.conversions.banner), { description: 'file-processed' });
    const job = await signedFetch(`${h.url}/api/v1/jobs/${res.body.job_id}`, admin);
    expect(await job.json()).toMatchObject({ type: 'processing', status: 'COMPLETED', progress: 100 });
    await commands.stop();
    await events.stop();
  });

  it('answers 400 for unknown or inapplicable keys, 404 for unknown or foreign assets', async () => {
    const text = await create('text/plain');
    expect((await call(`/api/v1/assets/${text}/process`, { keys: ['banner'] })).status).toBe(400);
    const image = await create('image/png');
    publishReport(h, await finalReport(h, made(image, {})));
    await waitFor(async () => (await data(image)).status === 'OK', { description: 'OK' });
    for (const keys of [['nope'], ['480p-video'], ['hls-video'], [], 'banner']) {
      expect([keys, (await call(`/api/v1/assets/${image}/process`, { keys })).status]).toEqual([keys, 400]);
    }
    expect((await call(`/api/v1/assets/${'0'.repeat(32)}/process`, { keys: ['banner'] })).status).toBe(404);
    expect((await call(`/api/v1/assets/${image}/process`, { keys: ['banner'] }, principal({ group_id: GROUP + 1 }))).status).toBe(404);
  });
});

describe('who may process or run addons (security review F19)', () => {
  it("a USER only on assets it may edit (its own), as Update Data: 403 on another user's", async () => {
    const user = principal({ group_id: GROUP, user_id: 5, role: 'USER' });
    const ok = async (owner = admin) => {
      const id = await create('image/png', owner);
      publishReport(h, await finalReport(h, made(id, {})));
      await waitFor(async () => (await data(id)).status === 'OK', { description: 'OK' });
      return id;
    };
    const others = await ok();
    expect(await call(`/api/v1/assets/${others}/process`, { keys: ['banner'] }, user)).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
    for (const addon of ['auto_tagging', 'background_removal']) {
      expect((await call(`/api/v1/assets/${others}/addons/${addon}`, {}, user)).status).toBe(403);
    }
    const own = await ok(user);
    expect((await call(`/api/v1/assets/${own}/process`, { keys: ['banner'] }, user)).status).toBe(202);
    expect((await call(`/api/v1/assets/${others}/process`, { keys: ['banner'] }, principal({ group_id: GROUP, user_id: 6, role: 'MANAGER' }))).status).toBe(
      202,
    );
  });
});

describe('an addon of no name the API knows (CONTRACT §16)', () => {
  it('answers 404 ADDON_NOT_FOUND whatever its form, to a run and to a read', async () => {
    const id = await create('image/png');
    for (const addon of ['colourise', 'x'.repeat(65)]) {
      expect(await call(`/api/v1/assets/${id}/addons/${addon}`, {})).toMatchObject({ status: 404, body: { error: { code: 'ADDON_NOT_FOUND' } } });
      const read = await signedFetch(`${h.url}/api/v1/assets/${id}/addons/${addon}`, admin);
      expect([read.status, ((await read.json()) as any).error.code]).toEqual([404, 'ADDON_NOT_FOUND']);
    }
  });
});

describe('POST /api/v1/assets/{id}/addons/background_removal (CONTRACT §6)', () => {
  const ready = async () => {
    const id = await create('image/png');
    publishReport(h, await finalReport(h, made(id, { thumb: output(id, 'thumb') })));
    await waitFor(async () => (await data(id)).status === 'OK', { description: 'OK' });
    return id;
  };
  const png = (id: string, sum = checksum) => ({
    object_key: conversionKey(String(GROUP), id, sum, 'background_removal', 'png'),
    content_type: 'image/png',
    width: 10,
    height: 10,
    size: 99,
  });
  const addonReport = async (id: string, conversion: ReturnType<typeof png>, sum = checksum) =>
    finalReport(
      h,
      { ...made(id, { background_removal: conversion }), source_checksum: sum },
      {
        worker: 'addon@test:1',
        step: 'background_removal',
        addon_result: { addon: 'background_removal', result: { key: 'background_removal', width: 10, height: 10, size: 99 } },
      },
    );
  const jobOf = async (jobId: number) => (await (await signedFetch(`${h.url}/api/v1/jobs/${jobId}`, admin)).json()) as any;

  it('keeps the PNG as the conversion background_removal, marks the addon available and drops both with the trash', async () => {
    const id = await ready();
    const run = await call(`/api/v1/assets/${id}/addons/background_removal`, {});
    expect(run).toEqual({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    publishReport(h, await addonReport(id, png(id)));
    await waitFor(async () => (await jobOf(run.body.job_id)).status === 'COMPLETED', { description: 'the addon job' });
    const after = await data(id);
    expect(after.conversions.background_removal).toMatchObject({ width: 10, height: 10, size: 99 });
    expect(after.addons_info).toEqual({ background_removal: { available: true } });
    const result = await signedFetch(`${h.url}/api/v1/assets/${id}/addons/background_removal`, admin);
    expect(await result.json()).toEqual({ key: 'background_removal', width: 10, height: 10, size: 99 });
    expect((await call(`/api/v1/assets/${id}/delete`, { keys: ['original'] })).status).toBe(200);
    const { rows } = await h.pool.query<{ addons_info: unknown; conversions: unknown }>('SELECT addons_info, conversions FROM assets WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ addons_info: {}, conversions: {} });
  });

  it('ends the job ERROR when the original changed while it ran, or the report names no conversion', async () => {
    const id = await ready();
    const stale = await call(`/api/v1/assets/${id}/addons/background_removal`, {});
    const other = createHash('md5').update('another original').digest('hex');
    publishReport(h, await addonReport(id, png(id, other), other));
    await waitFor(async () => (await jobOf(stale.body.job_id)).status === 'ERROR', { description: 'the stale job' });
    expect((await jobOf(stale.body.job_id)).error).toMatch(/asset changed/);
    const empty = await call(`/api/v1/assets/${id}/addons/background_removal`, {});
    publishReport(h, { ...(await addonReport(id, png(id))), outputs: outputsOf(made(id, {})) });
    await waitFor(async () => (await jobOf(empty.body.job_id)).status === 'ERROR', { description: 'the empty job' });
    expect((await data(id)).conversions.background_removal).toBeUndefined();
  });

  it('answers 503 with the reason while the addon service says the model failed to load', async () => {
    const id = await ready();
    const addon = await connectNats(h.nats.url, 'addon', h.nats.seed('addon'));
    const replies = serveAddonStatus(addon, () => ({
      background_removal: { state: 'failed', reason: 'the model files are missing' },
      auto_tagging: { state: 'loading' },
    }));
    await addon.flush();
    try {
      expect(await call(`/api/v1/assets/${id}/addons/background_removal`, {})).toEqual({
        status: 503,
        body: { error: { code: 'ADDON_UNAVAILABLE', message: expect.stringContaining('the model files are missing') } },
      });
      // Still loading: the run waits in the queue.
      expect((await call(`/api/v1/assets/${id}/addons/auto_tagging`, {})).status).toBe(202);
      // The asset's own checks come first.
      expect((await call(`/api/v1/assets/${'0'.repeat(32)}/addons/background_removal`, {})).status).toBe(404);
    } finally {
      replies.unsubscribe();
      await addon.close();
    }
    expect((await call(`/api/v1/assets/${id}/addons/background_removal`, {})).status).toBe(202);
  });
});
