/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { conversionKey, originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { assetId, finalReport, principal, publishReport, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 14;
const admin = principal({ group_id: GROUP, user_id: 1 });

async function create(contentType: string): Promise<{ id: string; bytes: Buffer; thumb: Buffer }> {
  const id = assetId();
  const bytes = Buffer.from(`original ${id}`);
  const checksum = createHash('md5').update(bytes).digest('hex');
  await h.storage.putBuffer(originalKey(String(GROUP), id), bytes, { contentType });
  const res = await signedFetch(`${h.url}/internal/v1/assets`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [{ id, name: 'p.png', size: bytes.length, checksum, content_type: contentType, object_key: originalKey(String(GROUP), id), metadata: {} }],
    }),
  });
  expect(res.status).toBe(201);
  const thumb = Buffer.from(`thumb ${id}`);
  if (contentType.startsWith('image/')) {
    const key = conversionKey(String(GROUP), id, checksum, 'thumb', 'webp');
    await h.storage.putBuffer(key, thumb, { contentType: 'image/webp' });
    const made = { id: 'r', asset_id: id, group_id: String(GROUP), source_checksum: checksum, image: { width: 1, height: 1 }, errors: {} };
    publishReport(
      h,
      await finalReport(h, { ...made, conversions: { thumb: { object_key: key, content_type: 'image/webp', width: 1, height: 1, size: thumb.length } } }),
    );
    await waitFor(async () => (await data(id)).status === 'OK', { description: 'OK' });
  }
  return { id, bytes, thumb };
}

const data = async (id: string): Promise<any> => (await signedFetch(`${h.url}/api/v1/assets/${id}/data`, admin)).json();
const setPublic = async (id: string, keys: unknown): Promise<{ status: number; body: any }> => {
  const res = await signedFetch(`${h.url}/api/v1/assets/${id}/content/set_public_access`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ keys }),
  });
  return { status: res.status, body: await res.json() };
};
/** An anonymous GET straight to the object store, as a browser would do with the public URL. */
const anonymous = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
};

describe('Set Public Access (endpoint 10)', () => {
  it('makes the listed objects anonymously readable, and only them, and shows them in Get Data', async () => {
    const { id, bytes, thumb } = await create('image/png');
    const other = await create('image/png');
    const res = await setPublic(id, ['original', 'thumb']);
    expect(res).toEqual({ status: 200, body: { id, public: { original: true, thumb: true } } });
    const body = await data(id);
    expect(body.conversions.thumb.public).toBe(true);
    expect(Object.keys(body.urls.public).sort()).toEqual(['original', 'thumb']);
    expect(await anonymous(body.urls.public.original)).toEqual({ status: 200, body: bytes });
    expect(await anonymous(body.urls.public.thumb)).toEqual({ status: 200, body: thumb });
    // The bucket itself, and another asset's objects, stay private.
    expect((await anonymous(body.urls.public.original.replace(id, other.id))).status).toBe(403);
    const bucketUrl = body.urls.public.original.slice(0, body.urls.public.original.indexOf('/originals/'));
    expect((await anonymous(bucketUrl)).status).toBe(403);
    expect((await data(other.id)).urls.public).toEqual({});
  });

  it('refuses keys the file type does not allow (400) and answers 404 for a missing conversion', async () => {
    const text = await create('text/plain');
    expect((await setPublic(text.id, ['thumb'])).status).toBe(400);
    expect((await setPublic(text.id, ['720p-video'])).status).toBe(400);
    expect((await setPublic(text.id, [])).status).toBe(400);
    expect((await setPublic(text.id, 'original')).status).toBe(400);
    const image = await create('image/png');
    expect((await setPublic(image.id, ['smart_imaging'])).status).toBe(400);
    expect((await setPublic(image.id, ['480p-video'])).status).toBe(400);
    expect((await setPublic(image.id, ['poster9'])).body.error.code).toBe('CONVERSION_NOT_FOUND');
    expect((await setPublic('0'.repeat(32), ['original'])).status).toBe(404);
    expect((await setPublic(text.id, ['original'])).status).toBe(200);
  });

  it("never makes a user's active content public (security review F15): HTML, SVG or a custom conversion of either answers 400", async () => {
    // The object store serves a public object inline, as stored: before, this HTML answered 200 text/html anonymously.
    const html = await create('text/html');
    const refused = await setPublic(html.id, ['original']);
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED', details: [{ path: 'keys', message: expect.stringMatching(/text\/html.*download link/) }] } },
    });
    expect((await data(html.id)).urls.public).toEqual({});
    expect((await anonymous(h.storage.publicUrl(originalKey(String(GROUP), html.id)))).status).toBe(403);
    for (const [type, status] of [
      ['application/xhtml+xml', 400],
      ['text/javascript', 400],
      ['application/xml', 400],
      ['application/pdf', 200],
      ['text/plain', 200],
    ] as const) {
      expect({ type, status: (await setPublic((await create(type)).id, ['original'])).status }).toEqual({ type, status });
    }
    // An SVG image: its original is refused, its raster conversions stay allowed (the whole request is refused as one).
    const svg = await create('image/svg+xml');
    expect((await setPublic(svg.id, ['original', 'thumb'])).status).toBe(400);
    expect(await setPublic(svg.id, ['thumb'])).toEqual({ status: 200, body: { id: svg.id, public: { thumb: true } } });
    // A custom conversion holds what its uploader sent: an SVG one is refused, a PNG one allowed.
    const image = await create('image/png');
    const add = async (name: string, bytes: Buffer) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), 'c.bin');
      const res = await signedFetch(`${h.url}/api/v1/assets/${image.id}/content/${name}`, admin, { method: 'POST', body: form });
      return (await res.json()) as { content_type: string };
    };
    const vector = await add('vector1', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'));
    expect(vector.content_type).toBe('image/svg+xml');
    expect((await setPublic(image.id, ['vector1'])).status).toBe(400);
    expect((await setPublic(image.id, ['original'])).status).toBe(200);
    // A public PNG conversion sent again as SVG (the same object key) stops being public.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    expect((await add('poster2', png)).content_type).toBe('image/png');
    expect((await setPublic(image.id, ['poster2'])).status).toBe(200);
    const url = (await data(image.id)).urls.public.poster2;
    await waitFor(async () => (await anonymous(url)).status === 200, { description: 'the PNG public' });
    expect((await add('poster2', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'))).content_type).toBe('image/svg+xml');
    const after = await data(image.id);
    expect(after.urls.public.poster2).toBeUndefined();
    expect(after.conversions.poster2.public).toBe(false);
    await waitFor(async () => (await anonymous(url)).status === 403, { description: 'the SVG not public' });
  });

  it('revokes the public URL when the asset is deleted', async () => {
    const { id, bytes } = await create('image/png');
    await setPublic(id, ['original']);
    const url = (await data(id)).urls.public.original;
    expect(await anonymous(url)).toEqual({ status: 200, body: bytes });
    const del = await signedFetch(`${h.url}/api/v1/assets/${id}/delete`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: ['original'] }),
    });
    expect(del.status).toBe(200);
    await waitFor(async () => (await anonymous(url)).status === 403, { description: 'public URL revoked' });
  });
});
