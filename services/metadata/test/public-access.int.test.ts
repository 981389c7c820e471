/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { conversionKey, originalKey, replacementKey } from '@dam/storage';
import { scaled, waitFor } from '@dam/testing';
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
/** The type and disposition an anonymous GET is served with. */
const served = async (url: string) => {
  const res = await fetch(url);
  await res.arrayBuffer();
  return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition') };
};
/** Gone from the public address: the store answers 403 (no listing right) or 404 for a removed copy. */
const revoked = async (url: string) => [403, 404].includes((await anonymous(url)).status);
const call = async (method: string, path: string, body?: unknown) => {
  const res = await signedFetch(`${h.url}${path}`, admin, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
};
/** The object key of a public URL (its path in the bucket). */
const keyOf = (url: string): string => decodeURIComponent(new URL(url).pathname.split('/').slice(2).join('/'));

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
    // Copies under the public prefix, each in a folder of its own; the stored objects themselves stay private.
    expect(keyOf(body.urls.public.original)).toMatch(new RegExp(`^public/${GROUP}/${id}/[0-9a-f]{16}/${id}$`));
    expect(keyOf(body.urls.public.thumb)).toMatch(new RegExp(`^public/${GROUP}/${id}/[0-9a-f]{16}/thumb\\.webp$`));
    expect((await anonymous(h.storage.publicUrl(originalKey(String(GROUP), id)))).status).toBe(403);
    expect((await anonymous(h.storage.publicUrl(originalKey(String(GROUP), other.id)))).status).toBe(403);
    // The bucket and the prefix cannot be listed.
    const bucketUrl = body.urls.public.original.slice(0, body.urls.public.original.indexOf('/public/'));
    expect((await anonymous(bucketUrl)).status).toBe(403);
    expect((await anonymous(`${bucketUrl}?prefix=public/`)).status).toBe(403);
    expect((await data(other.id)).urls.public).toEqual({});
    // Publishing again keeps the URL (no second copy).
    expect((await setPublic(id, ['original'])).status).toBe(200);
    expect((await data(id)).urls.public.original).toBe(body.urls.public.original);
    // The bucket policy is one statement on the prefix, however many objects are public.
    const policy = JSON.parse(await h.storage.client.getBucketPolicy(h.storage.bucket));
    expect(JSON.stringify(policy.Statement.map((st: any) => st.Resource))).toMatch(/^\[(\[)?"arn:aws:s3:::[^"]+\/public\/\*"(\])?\]$/);
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

  it("serves a user's active content from the public address only as an attachment (security review F15)", async () => {
    // The object store serves an object as stored: before, a public HTML original answered 200 text/html inline.
    const html = await create('text/html');
    expect(await setPublic(html.id, ['original'])).toEqual({ status: 200, body: { id: html.id, public: { original: true } } });
    const url = (await data(html.id)).urls.public.original;
    expect(await served(url)).toEqual({ status: 200, type: 'text/html', disposition: 'attachment' });
    for (const type of ['application/xhtml+xml', 'text/javascript', 'application/xml', 'image/svg+xml']) {
      const { id } = await create(type);
      expect((await setPublic(id, ['original'])).status).toBe(200);
      expect({ kind: type, ...(await served((await data(id)).urls.public.original)) }).toEqual({ kind: type, status: 200, type, disposition: 'attachment' });
    }
    // Passive types stay inline (no disposition), as stored.
    const pdf = await create('application/pdf');
    expect((await setPublic(pdf.id, ['original'])).status).toBe(200);
    expect(await served((await data(pdf.id)).urls.public.original)).toEqual({ status: 200, type: 'application/pdf', disposition: null });
    // An SVG image's raster thumbnail inline, its original as an attachment.
    const svg = await create('image/svg+xml');
    expect((await setPublic(svg.id, ['original', 'thumb'])).status).toBe(200);
    const svgUrls = (await data(svg.id)).urls.public;
    expect(await served(svgUrls.thumb)).toEqual({ status: 200, type: 'image/webp', disposition: null });
    expect(await served(svgUrls.original)).toMatchObject({ status: 200, disposition: 'attachment' });
    // A custom conversion holds what its uploader sent: an SVG one is an attachment too.
    const image = await create('image/png');
    const add = async (name: string, bytes: Buffer) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), 'c.bin');
      const res = await signedFetch(`${h.url}/api/v1/assets/${image.id}/content/${name}`, admin, { method: 'POST', body: form });
      return (await res.json()) as { content_type: string };
    };
    const script = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    expect((await add('vector1', script)).content_type).toBe('image/svg+xml');
    expect((await setPublic(image.id, ['vector1'])).status).toBe(200);
    expect(await served((await data(image.id)).urls.public.vector1)).toEqual({ status: 200, type: 'image/svg+xml', disposition: 'attachment' });
    // A public PNG conversion sent again as SVG (the same key) stays public with the new bytes, as an attachment.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    expect((await add('poster2', png)).content_type).toBe('image/png');
    expect((await setPublic(image.id, ['poster2'])).status).toBe(200);
    const poster = (await data(image.id)).urls.public.poster2;
    expect(await anonymous(poster)).toEqual({ status: 200, body: png });
    expect((await add('poster2', script)).content_type).toBe('image/svg+xml');
    await waitFor(async () => (await anonymous(poster)).body.equals(script), { description: 'the public copy made again' });
    expect(await served(poster)).toEqual({ status: 200, type: 'image/svg+xml', disposition: 'attachment' });
    expect((await data(image.id)).conversions.poster2.public).toBe(true);
  });

  it('removes the public copy on revocation: Delete of the asset or of the key, Replace, and Purge', async () => {
    const kept = await create('image/png');
    expect((await setPublic(kept.id, ['original'])).status).toBe(200);
    const keptUrl = (await data(kept.id)).urls.public.original;
    const published = async (keys: string[]) => {
      const asset = await create('image/png');
      expect((await setPublic(asset.id, keys)).status).toBe(200);
      const urls = (await data(asset.id)).urls.public as Record<string, string>;
      for (const url of Object.values(urls)) expect((await anonymous(url)).status).toBe(200);
      return { ...asset, urls };
    };
    const gone = async (url: string, what: string) => {
      await waitFor(async () => (await revoked(url)) && (await h.storage.stat(keyOf(url))) === null, { description: `${what}: copy removed` });
    };

    // Delete of the thumbnail only: its copy goes, the original's stays.
    const trimmed = await published(['original', 'thumb']);
    expect((await call('POST', `/api/v1/assets/${trimmed.id}/delete`, { keys: ['thumb'] })).status).toBe(200);
    await gone(trimmed.urls.thumb!, 'delete thumb');
    expect(await anonymous(trimmed.urls.original!)).toEqual({ status: 200, body: trimmed.bytes });
    expect(Object.keys((await data(trimmed.id)).urls.public)).toEqual(['original']);

    // Delete of the asset (to the trash).
    const trashed = await published(['original', 'thumb']);
    expect((await call('POST', `/api/v1/assets/${trashed.id}/delete`, { keys: ['original'] })).status).toBe(200);
    await gone(trashed.urls.original!, 'delete');
    await gone(trashed.urls.thumb!, 'delete');

    // Replace of the original.
    const replaced = await published(['original']);
    const fresh = Buffer.from(`replacement ${replaced.id}`);
    const key = replacementKey(String(GROUP), replaced.id, '0123456789abcdef');
    await h.storage.putBuffer(key, fresh, { contentType: 'image/png' });
    const res = await call('POST', `/internal/v1/assets/${replaced.id}/original`, {
      name: 'p2.png',
      size: fresh.length,
      checksum: createHash('md5').update(fresh).digest('hex'),
      content_type: 'image/png',
      object_key: key,
      metadata: {},
    });
    expect(res.status).toBe(200);
    await gone(replaced.urls.original!, 'replace');
    expect((await data(replaced.id)).urls.public).toEqual({});

    // Purge of the trash: an asset published, trashed (revoked then), published copies none left behind.
    const purged = await published(['original']);
    expect((await call('POST', `/api/v1/assets/${purged.id}/delete`, { keys: ['original'] })).status).toBe(200);
    const purge = await call('DELETE', '/api/v1/assets/trash/purge');
    expect(purge.status).toBe(202);
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${purge.body.job_id}`)).body.status === 'COMPLETED', { description: 'purge done' });
    await gone(purged.urls.original!, 'purge');
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM public_copies WHERE asset_id = ANY($1)', [[trashed.id, replaced.id, purged.id]])).rows[0].n,
    ).toBe(0);

    // The other asset's public URL was never touched.
    expect(await anonymous(keptUrl)).toEqual({ status: 200, body: kept.bytes });
  });

  it(
    'publishes past the old policy cap (400 objects of one group) and still revokes one of them (security review F14)',
    async () => {
      // Before, the policy listed every public object: past about 300, Set Public Access failed (the store refused
      // the policy) and revocations were no longer written.
      const ids: string[] = [];
      for (let batch = 0; batch < 4; batch += 1) {
        const files = await Promise.all(
          Array.from({ length: 100 }, async () => {
            const id = assetId();
            const bytes = Buffer.from(`many ${id}`);
            await h.storage.putBuffer(originalKey(String(GROUP), id), bytes, { contentType: 'text/plain' });
            ids.push(id);
            const checksum = createHash('md5').update(bytes).digest('hex');
            return { id, name: 'm.txt', size: bytes.length, checksum, content_type: 'text/plain', object_key: originalKey(String(GROUP), id), metadata: {} };
          }),
        );
        expect((await call('POST', '/internal/v1/assets', { files })).status).toBe(201);
      }
      const statuses = new Map<number, number>();
      for (let i = 0; i < ids.length; i += 8) {
        for (const { status } of await Promise.all(ids.slice(i, i + 8).map((id) => setPublic(id, ['original']))))
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
      expect(Object.fromEntries(statuses)).toEqual({ 200: 400 });
      // The bucket policy stays one statement, far below the 20 KiB AWS S3 and MinIO refuse beyond (radosgw, here,
      // takes more: before, its policy held 400 ARNs, over 30 KiB, that those stores would have refused).
      expect(Buffer.byteLength(await h.storage.client.getBucketPolicy(h.storage.bucket))).toBeLessThan(1024);
      const first = (await data(ids[0]!)).urls.public.original;
      const last = (await data(ids[399]!)).urls.public.original;
      expect((await anonymous(last)).status).toBe(200);
      expect((await call('POST', `/api/v1/assets/${ids[0]}/delete`, { keys: ['original'] })).status).toBe(200);
      await waitFor(() => revoked(first), { description: 'the first of 400 revoked' });
      expect((await anonymous(last)).status).toBe(200);
    },
    scaled(120_000),
  );
});
