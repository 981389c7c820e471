/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS } from '@dam/events';
import { originalKey } from '@dam/storage';
import { makePng, waitFor } from '@dam/testing';
import { assetId, collect, principal, registerAsset, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
let events: Awaited<ReturnType<typeof collect>>;
beforeAll(async () => {
  h = await startMetadata();
  events = await collect(h.nc, ASSET_EVENTS, 'assets.events.12.*');
});
afterAll(async () => {
  await events?.stop();
  await h?.stop();
});

const GROUP = 12;
const admin = principal({ group_id: GROUP, user_id: 1 });
const user = principal({ group_id: GROUP, user_id: 3, role: 'USER' });

async function create(p = admin): Promise<string> {
  const id = assetId();
  const bytes = Buffer.from(`text ${id}`);
  await h.storage.putBuffer(originalKey(String(GROUP), id), bytes, { contentType: 'text/plain' });
  return registerAsset(h, p, { id, name: 'notes.txt', size: bytes.length, checksum: createHash('md5').update(bytes).digest('hex'), contentType: 'text/plain' });
}

async function addConversion(id: string, name: string, bytes: Buffer, p = admin, field = 'file'): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append(field, new Blob([bytes]), 'c.bin');
  const res = await signedFetch(`${h.url}/api/v1/assets/${id}/content/${name}`, p, { method: 'POST', body: form });
  return { status: res.status, body: await res.json() };
}

const get = async (path: string, p = admin) => signedFetch(`${h.url}${path}`, p);

describe('Add, Get and Delete Conversion (endpoints 13-15)', () => {
  it('stores a custom conversion with its size and dimensions, lists it, serves it, and raises file-processed', async () => {
    const id = await create();
    const png = makePng(12, 7);
    const added = await addConversion(id, 'poster1', png);
    expect(added).toEqual({ status: 200, body: { key: 'poster1', width: 12, height: 7, size: png.length, content_type: 'image/png' } });
    const data = (await (await get(`/api/v1/assets/${id}/data`)).json()) as any;
    expect(data.conversions).toEqual({ poster1: { width: 12, height: 7, size: png.length, public: false } });
    const served = await get(`/api/v1/assets/${id}/conversions/poster1`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('content-disposition')).toMatch(/^inline/);
    expect(Buffer.from(await served.arrayBuffer())).toEqual(png);
    const original = await get(`/api/v1/assets/${id}/conversions/original`);
    expect(await original.text()).toBe(`text ${id}`);
    await waitFor(() => events.messages.some((m) => m.payload.asset_id === id && m.subject.endsWith('file-processed') && m.payload.data.conversions.poster1));

    // Added again under the same name: the new file replaces the old one.
    const bigger = makePng(20, 10);
    expect((await addConversion(id, 'poster1', bigger)).body).toMatchObject({ width: 20, height: 10, size: bigger.length });
    expect(Buffer.from(await (await get(`/api/v1/assets/${id}/conversions/poster1`)).arrayBuffer())).toEqual(bigger);
  });

  it("answers 409 for built-in keys before the name rule, then 400 for bad names, 404 for unknown assets, 403 for others' assets", async () => {
    const id = await create();
    for (const name of ['deepzoom', 'smart_imaging', 'original', '480p-video', 'storyboard']) {
      const res = await addConversion(id, name, Buffer.from('x'));
      expect({ name, status: res.status, code: res.body.error.code }).toEqual({ name, status: 409, code: 'CONVERSION_KEY_RESERVED' });
    }
    for (const name of ['with-dash', 'a'.repeat(31), 'sp%20ace', 'under_score']) {
      const res = await addConversion(id, name, Buffer.from('x'));
      expect({ name, status: res.status }).toEqual({ name, status: 400 });
    }
    expect((await addConversion('0'.repeat(32), 'thumb2', Buffer.from('x'))).status).toBe(404);
    expect((await addConversion(id, 'thumb2', Buffer.from('x'), principal({ group_id: GROUP + 1 }))).status).toBe(404);
    expect((await addConversion(id, 'thumb2', Buffer.from('x'), user)).status).toBe(403);
    expect((await addConversion(id, 'thumb2', Buffer.from('x'), admin, 'other')).status).toBe(400);
    expect(await h.storage.listKeys(`conversions/${GROUP}/${id}/`)).toEqual([]);
  });

  it('deletes a conversion and its bytes (404 once gone), and refuses multi-file keys on Get Conversion', async () => {
    const id = await create();
    await addConversion(id, 'small', makePng(3, 3));
    const [key] = await h.storage.listKeys(`conversions/${GROUP}/${id}/`);
    const res = await signedFetch(`${h.url}/api/v1/assets/${id}/content/small`, admin, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id, deleted: ['small'] });
    expect((await signedFetch(`${h.url}/api/v1/assets/${id}/content/small`, admin, { method: 'DELETE' })).status).toBe(404);
    // A name no conversion can have is as unknown (CONTRACT §16; 400 VALIDATION_FAILED before).
    const tooLong = await signedFetch(`${h.url}/api/v1/assets/${id}/content/${'n'.repeat(257)}`, admin, { method: 'DELETE' });
    expect({ status: tooLong.status, code: ((await tooLong.json()) as { error: { code: string } }).error.code }).toEqual({
      status: 404,
      code: 'CONVERSION_NOT_FOUND',
    });
    expect((await get(`/api/v1/assets/${id}/conversions/small`)).status).toBe(404);
    await waitFor(async () => (await h.storage.stat(key ?? '')) === null, { description: 'conversion bytes removed' });
    expect((await get(`/api/v1/assets/${id}/conversions/deepzoom`)).status).toBe(400);
    expect((await get(`/api/v1/assets/${id}/conversions/hls-video`)).status).toBe(400);
    const deleted = () => events.messages.find((m) => m.payload.asset_id === id && m.subject.endsWith('file-deleted'));
    await waitFor(() => deleted() !== undefined, { description: 'file-deleted' });
    expect(deleted()?.payload.data).toMatchObject({
      id,
      event: 'file-deleted',
      keys: ['small'],
      status: 'OK',
    });
  });
});
