/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { assetId, finalReport, principal, publishReport, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 25;
const admin = principal({ group_id: GROUP, user_id: 1 });

/** An image asset whose processing reported `phash`. */
async function image(phash: string | undefined, p = admin): Promise<string> {
  const id = assetId();
  const checksum = createHash('md5').update(id).digest('hex');
  const res = await signedFetch(`${h.url}/internal/v1/assets`, p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ files: [{ id, name: 'p.png', size: 1, checksum, content_type: 'image/png', object_key: originalKey(String(GROUP), id), metadata: {} }] }),
  });
  expect(res.status).toBe(201);
  const made = { id: 'r', asset_id: id, group_id: String(GROUP), source_checksum: checksum, image: { width: 1, height: 1 }, conversions: {}, errors: {} };
  publishReport(h, await finalReport(h, phash ? { ...made, metadata: { phash } } : made));
  await waitFor(async () => (await get(`/api/v1/assets/${id}/data`)).body.status === 'OK', { description: 'OK' });
  return id;
}

const get = async (path: string, p = admin) => {
  const res = await signedFetch(`${h.url}${path}`, p);
  return { status: res.status, body: (await res.json()) as any };
};

describe('GET /api/v1/assets/{id}/similar (CONTRACT §14)', () => {
  it('lists assets within max_distance bits, nearest first, never itself', async () => {
    const base = await image('00000000000000ff');
    const one = await image('00000000000000fe'); // 1 bit
    const four = await image('000000000000000f'); // 4 bits
    const far = await image('ffffffffffffff00'); // 64 bits
    await image(undefined);
    expect((await get(`/api/v1/assets/${base}/similar`)).body).toEqual({ items: [{ id: one, distance: 1 }, { id: four, distance: 4 }] });
    expect((await get(`/api/v1/assets/${base}/similar?max_distance=1`)).body.items).toEqual([{ id: one, distance: 1 }]);
    expect((await get(`/api/v1/assets/${base}/similar?max_distance=32`)).body.items.map((i: any) => i.id)).not.toContain(far);
    for (const bad of ['-1', '33', 'x']) expect((await get(`/api/v1/assets/${base}/similar?max_distance=${bad}`)).status).toBe(400);
    expect((await get(`/api/v1/assets/${base}/similar`, principal({ group_id: GROUP + 1 }))).status).toBe(404);
  });
});
