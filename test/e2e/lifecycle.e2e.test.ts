/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { ASSET_EVENT_SCHEMAS, type AssetEventType } from '@dam/events';
import { testMinioClient, waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { useSuite } from './suite';

// Settings at the default (read fresh): the bulk-delete test changes the limits and expects them at once.
const e2e = useSuite({ metadata: { REPLACED_ORIGINAL_GRACE_MS: '0', OBJECT_DELETIONS_INTERVAL_MS: '200', PUBLIC_POLICY_INTERVAL_MS: '200' } });
let events: Awaited<ReturnType<typeof watchAssetEvents>>;
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
});
e2e.beforeStop(() => events?.close());

const png = (r: number) =>
  sharp({ create: { width: 320, height: 240, channels: 3, background: { r, g: 90, b: 30 } } })
    .png()
    .toBuffer();

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${path}`, {
    method,
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

async function upload(files: Array<[Buffer, string]>, path = '/api/v1/assets/new/content/original/upload'): Promise<any> {
  const form = new FormData();
  files.forEach(([bytes, name], i) => form.append(`file${i}`, new Blob([bytes]), name));
  const res = await fetch(`${e2e.suite.upload}${path}`, { method: 'POST', headers: auth(), body: form });
  expect(res.status).toBe(200);
  return res.json();
}

const data = (id: string) => call('GET', `/api/v1/assets/${id}/data`);
const ok = (id: string) => waitFor(async () => (await data(id)).body.status === 'OK', { timeoutMs: 30_000, intervalMs: 200, description: `${id} OK` });
async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const item of testMinioClient().listObjectsV2(e2e.suite.bucket, prefix, true)) if (item.name) keys.push(item.name);
  return keys;
}

describe('an asset through its whole life, through the public addresses', () => {
  let id: string;
  let first: Buffer;
  let second: Buffer;

  it('uploads, updates data, makes keys public and adds a custom conversion', async () => {
    first = await png(10);
    id = (await upload([[first, 'life.png']])).files[0].id;
    await ok(id);
    expect((await data(id)).body.conversions.thumb).toMatchObject({ width: 200, height: 200, public: false });

    expect(await call('POST', `/api/v1/assets/${id}/data/update`, { data: { title: 'first' }, mode: 'APPEND' })).toMatchObject({
      status: 200,
      body: { data: { title: 'first' } },
    });

    const pub = await call('POST', `/api/v1/assets/${id}/content/set_public_access`, { keys: ['original', 'thumb'] });
    expect(pub).toEqual({ status: 200, body: { id, public: { original: true, thumb: true } } });
    const urls = (await data(id)).body.urls.public;
    const anonymous = await fetch(urls.original);
    expect(Buffer.from(await anonymous.arrayBuffer())).toEqual(first);

    const form = new FormData();
    form.append('file', new Blob([await png(200)]), 'poster.png');
    const added = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/poster1`, { method: 'POST', headers: auth(), body: form });
    expect(added.status).toBe(200);
    expect(await added.json()).toMatchObject({ key: 'poster1', width: 320, height: 240, content_type: 'image/png' });
    const got = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/conversions/poster1`, { headers: auth() });
    expect(got.status).toBe(200);
    expect((await call('POST', `/api/v1/assets/${id}/content/deepzoom`)).status).toBe(409);
  });

  it('transforms images on demand on Get Conversion, caches the result and makes identical misses once', async () => {
    const get = (query: string, headers: Record<string, string> = {}) =>
      fetch(`${e2e.suite.base}/api/v1/assets/${id}/conversions/thumb${query}`, { headers: { ...auth(), ...headers } });
    const res = await get('?w=50&format=png');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 50, height: 50 });
    const made = () => (e2e.suite.services.conversion?.logs() ?? []).filter((l) => l.includes('"transform made"')).length;
    const before = made();
    // The same request again is a cache hit: nothing is made.
    expect((await get('?w=50&format=png')).status).toBe(200);
    // Five identical cold requests at once: one transform.
    const cold = await Promise.all(Array.from({ length: 5 }, () => get('?w=64&h=32&fit=cover&format=webp&q=60')));
    expect(cold.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const decoded = await sharp(Buffer.from(await (cold[0] as Response).arrayBuffer())).metadata();
    expect(decoded).toMatchObject({ format: 'webp', width: 64, height: 32 });
    await waitFor(() => made() === before + 1, { description: 'one transform made for five requests' });
    // format=auto follows Accept.
    const auto = await get('?w=40&format=auto', { accept: 'image/avif,image/webp,*/*' });
    expect(auto.headers.get('content-type')).toBe('image/avif');
    expect(auto.headers.get('vary')).toMatch(/Accept/i);
    for (const bad of ['?w=0', '?w=9000', '?fit=squash', '?format=gif', '?q=101', '?h=abc']) expect([bad, (await get(bad)).status]).toEqual([bad, 400]);
  });

  it('makes a deepzoom pyramid on request and serves it below its key (Get Conversion of deepzoom is 400)', async () => {
    const job = await call('POST', `/api/v1/assets/${id}/process`, { keys: ['deepzoom', 'smart_imaging'] });
    expect(job).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${job.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 30_000,
      description: 'process job',
    });
    const after = (await data(id)).body;
    expect(after.conversions.deepzoom).toMatchObject({ width: 320, height: 240 });
    expect(after.addons_info.ON_DEMAND_IMAGE).toEqual({ available: true });
    const dzi = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/deepzoom/image.dzi`, { headers: auth() });
    expect(dzi.status).toBe(200);
    expect(dzi.headers.get('content-type')).toMatch(/xml/);
    expect(await dzi.text()).toMatch(/Width="320"[\s\S]*Height="240"|Height="240"[\s\S]*Width="320"/);
    const tile = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/deepzoom/image_files/9/0_0.jpeg`, { headers: auth() });
    expect(tile.status).toBe(200);
    expect((await sharp(Buffer.from(await tile.arrayBuffer())).metadata()).format).toBe('jpeg');
    expect((await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/deepzoom/image_files/99/0_0.jpeg`, { headers: auth() })).status).toBe(404);
    expect((await fetch(`${e2e.suite.base}/api/v1/assets/${id}/conversions/deepzoom`, { headers: auth() })).status).toBe(400);
    expect((await call('POST', `/api/v1/assets/${id}/process`, { keys: ['480p-video'] })).status).toBe(400);
  });

  it('replaces the content: same id, new checksum, old conversions and public URLs gone, new conversions made', async () => {
    const before = (await data(id)).body;
    second = await png(250);
    const replaced = await upload([[second, 'life-2.png']], `/api/v1/assets/${id}/content/original/replace`);
    expect(replaced.files[0]).toMatchObject({ id, checksum: md5(second), status: 'NOT_READY' });
    await ok(id);
    const after = (await data(id)).body;
    expect(after).toMatchObject({ id, checksum: md5(second), name: 'life-2.png', urls: { public: {} } });
    expect(Object.keys(after.conversions)).toEqual(['thumb']);
    const gid = '1'; // the first admin's group on a fresh suite
    await waitFor(async () => (await keysUnder(`conversions/${gid}/${id}/${before.checksum}/`)).length === 0, { description: 'old conversions removed' });
    expect((await keysUnder(`conversions/${gid}/${id}/${md5(second)}/`)).length).toBeGreaterThan(0);
    await waitFor(async () => (await fetch(before.urls.public.thumb)).status === 403, { description: 'old public URL revoked' });
  });

  it('deletes to the trash and undeletes: byte-equal download, conversions made again', async () => {
    expect(await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).toMatchObject({
      status: 200,
      body: { id, keys: ['original'], status: 'OK' },
    });
    expect((await data(id)).body.error.code).toBe('ASSET_IN_TRASH');
    expect((await call('POST', `/api/v1/assets/trash/${id}/undelete`, { keys: ['original'] })).status).toBe(200);
    const download = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/original/download`, { headers: auth() });
    expect(Buffer.from(await download.arrayBuffer())).toEqual(second);
    await waitFor(async () => (await data(id)).body.conversions.thumb !== undefined, { timeoutMs: 30_000, description: 'thumb made again' });
  });

  it("bulk-deletes by upload time with the group's limits from settings, then purges the trash for good", async () => {
    expect((await call('PATCH', '/api/v1/settings', { bulk_delete: { max_assets: 2, max_range_days: 1 } })).status).toBe(200);
    const uploaded = (
      await upload([
        [Buffer.from('one'), 'a.txt'],
        [Buffer.from('two'), 'b.txt'],
        [Buffer.from('three'), 'c.txt'],
      ])
    ).files.map((f: any) => f.id);
    for (const f of uploaded) await ok(f);
    const now = Date.now();
    const range = { start_time: new Date(now - 3600_000).toISOString(), end_time: new Date(now + 60_000).toISOString() };
    expect(
      (await call('POST', '/api/v1/assets/bulk/delete', { start_time: new Date(now - 3 * 86400_000).toISOString(), end_time: range.end_time })).status,
    ).toBe(400);
    const bulk = await call('POST', '/api/v1/assets/bulk/delete', range);
    expect(bulk).toMatchObject({ status: 200, body: { status: 'QUEUED', job_id: expect.any(Number), message: expect.stringMatching(/remain/) } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${bulk.body.job_id}`)).body.status === 'COMPLETED', { description: 'bulk job' });
    const trashed = (await call('GET', `/api/v1/jobs/${bulk.body.job_id}`)).body.asset_ids as string[];
    expect(trashed).toHaveLength(2);

    const purge = await call('DELETE', '/api/v1/assets/trash/purge');
    expect(purge).toMatchObject({ status: 202, body: { status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${purge.body.job_id}`)).body.status === 'COMPLETED', { description: 'purge job' });
    for (const t of trashed) expect((await call('POST', `/api/v1/assets/trash/${t}/undelete`, { keys: ['original'] })).status).toBe(404);
  });

  it('reads media metadata: EXIF basics in the upload result, exif, thumbhash and phash once processed (CONTRACT §14)', async () => {
    const photo = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#3a6' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExifMerge({ IFD0: { Make: 'Canon', Model: 'EOS R5', Copyright: '(c) ACME' } })
      .toBuffer();
    const [file] = (await upload([[photo, 'camera.jpg']])).files;
    // Orientation 6 turns the picture: it is shown 200 wide and 300 high.
    expect(file.metadata).toMatchObject({ width: 200, height: 300, Orientation: 6, Make: 'Canon', Model: 'EOS R5' });
    expect(file.metadata).not.toHaveProperty('phash');
    await ok(file.id);
    const { metadata } = (await data(file.id)).body;
    expect(metadata).toMatchObject({ width: 200, height: 300, Make: 'Canon', ColorMode: 'RGB', exif: { Copyright: '(c) ACME' } });
    expect(metadata.thumbhash).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(metadata.phash).toMatch(/^[0-9a-f]{16}$/);
    expect(metadata.exif).not.toHaveProperty('GPS');
  });

  it('finds a resized copy of a picture as a near-duplicate, and not a different picture (CONTRACT §14)', async () => {
    // Pictures with structure (a perceptual hash of a flat colour says little): rings, and stripes.
    const picture = (width: number, height: number, shade: (x: number, y: number) => number) => {
      const pixels = Buffer.alloc(width * height * 3);
      for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) pixels.fill(shade(x / width, y / height), (y * width + x) * 3, (y * width + x) * 3 + 3);
      return sharp(pixels, { raw: { width, height, channels: 3 } });
    };
    const rings = (x: number, y: number) => 128 + 127 * Math.sin(14 * Math.hypot(x - 0.35, y - 0.4));
    const original = await picture(640, 480, rings).png().toBuffer();
    const copy = await sharp(original).resize(256).jpeg({ quality: 70 }).toBuffer();
    const other = await picture(640, 480, (x, y) => (Math.floor(x * 7 + y * 3) % 2 ? 230 : 20))
      .png()
      .toBuffer();
    const [a, b, c] = (
      await upload([
        [original, 'rings.png'],
        [copy, 'rings-small.jpg'],
        [other, 'stripes.png'],
      ])
    ).files.map((f: any) => f.id);
    for (const id of [a, b, c]) await ok(id);
    const similar = await call('GET', `/api/v1/assets/${a}/similar`);
    expect(similar.status).toBe(200);
    const found = similar.body.items.map((i: any) => i.id);
    expect(found).toContain(b);
    expect(found).not.toContain(c);
    expect(similar.body.items.find((i: any) => i.id === b).distance).toBeLessThanOrEqual(8);
    expect((await call('GET', `/api/v1/assets/${a}/similar?max_distance=33`)).status).toBe(400);
  });

  it('ends a decompression bomb in ERROR from its header, and the next upload still succeeds', async () => {
    // A 1x1 PNG whose header claims 60000x60000 pixels.
    const bomb = Buffer.from(
      await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
    );
    bomb.writeUInt32BE(60_000, 16);
    bomb.writeUInt32BE(60_000, 20);
    bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)), 29);
    const [bad] = (await upload([[bomb, 'bomb.png']])).files;
    await waitFor(async () => (await data(bad.id)).body.status === 'ERROR', { timeoutMs: 30_000, description: 'bomb ERROR' });
    expect((await data(bad.id)).body.errors.original).toMatch(/more than the limit/);
    const [good] = (await upload([[await png(90), 'after-bomb.png']])).files;
    await ok(good.id);
    expect((await data(good.id)).body.conversions.thumb).toMatchObject({ width: 200, height: 200 });
  });

  it("announced every change on ASSET_EVENTS with the specification's payload shapes", async () => {
    const mine = events.seen.filter((e) => e.asset_id === id);
    const types = new Set(mine.map((e) => e.type));
    for (const t of ['file-saved', 'file-processed', 'file-data-updated', 'file-deleted', 'file-undeleted']) expect(types).toContain(t);
    for (const e of events.seen) {
      const parsed = ASSET_EVENT_SCHEMAS[e.type as AssetEventType].safeParse(e.envelope);
      expect([e.type, parsed.success]).toEqual([e.type, true]);
    }
    const deleted = mine.find((e) => e.type === 'file-deleted')?.envelope as any;
    // OK when its conversions' files went before the Undelete came, MAYBE (kept) when it came first: the test does not wait.
    expect(deleted.data).toMatchObject({
      id,
      event: 'file-deleted',
      keys: ['original'],
      status: expect.stringMatching(/^(OK|MAYBE)$/),
      message: expect.any(String),
    });
    // Versions only grow, so a read model can apply them last-writer-wins.
    const versions = mine.map((e) => e.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
  });
});
