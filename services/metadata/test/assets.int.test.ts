/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS, assetDataSchema, FILE_PROCESSED, FILE_SAVED } from '@dam/events';
import { originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { assetId, collect, identities, signedFetch, principal, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const admin = principal();
const json = { 'content-type': 'application/json' };

function file(overrides: Record<string, unknown> = {}) {
  const id = assetId();
  return {
    id,
    name: 'notes.txt',
    size: 11,
    checksum: createHash('md5').update('hello world').digest('hex'),
    content_type: 'text/plain',
    object_key: originalKey('1', id),
    metadata: {},
    ...overrides,
  };
}

async function create(body: unknown, p = admin) {
  const res = await signedFetch(`${h.url}/internal/v1/assets`, p, { method: 'POST', headers: json, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('POST /internal/v1/assets', () => {
  it('creates assets NOT_READY (images) and OK (others) and publishes file-saved/file-processed through the outbox', async () => {
    const events = await collect(h.nc, ASSET_EVENTS, 'assets.events.1.*');
    const image = file({ name: 'pic.png', content_type: 'image/png', metadata: { width: 4, height: 3 } });
    const text = file();
    const res = await create({ files: [image, text], custom_metadata: { data: { title: 'x' } } });
    expect(res.status).toBe(201);
    expect(res.body.assets).toHaveLength(2);
    const [a, b] = res.body.assets;
    expect(assetDataSchema.parse(a).status).toBe('NOT_READY');
    expect(a.data).toEqual({ title: 'x' });
    expect(a.metadata).toEqual({ width: 4, height: 3 });
    expect(b.status).toBe('OK');

    await waitFor(() => events.messages.length >= 3, { description: 'three asset events' });
    await new Promise((r) => setTimeout(r, 300));
    await events.stop();
    const seen = events.messages.map((m) => [m.payload.asset_id, m.payload.type, m.subject, m.payload.version]);
    // A new row is version 1; the text asset then becomes OK in the same transaction: version 2.
    expect(seen).toEqual([
      [image.id, 'file-saved', 'assets.events.1.file-saved', 1],
      [text.id, 'file-saved', 'assets.events.1.file-saved', 1],
      [text.id, 'file-processed', 'assets.events.1.file-processed', 2],
    ]);
    const saved = FILE_SAVED.schema.parse(events.messages[0]?.payload);
    expect(saved.data.status).toBe('NOT_READY');
    expect(saved.group_id).toBe('1');
    expect(FILE_PROCESSED.schema.parse(events.messages[2]?.payload).data.status).toBe('OK');
  });

  it.each([
    ['a reserved _service key', { data: { _service_x: 1 } }, 400, 'VALIDATION_FAILED'],
    ['no data', { mode: 'APPEND' }, 400, 'VALIDATION_FAILED'],
    ['an unknown mode', { data: {}, mode: 'MERGE' }, 400, 'VALIDATION_FAILED'],
    ['an unknown schema', { data: {}, data_schema_id: 5 }, 400, 'VALIDATION_FAILED'],
    ['a string', 'not an object', 400, 'VALIDATION_FAILED'],
    ['data over 2000 characters', { data: { big: 'x'.repeat(2000) } }, 413, 'DATA_TOO_LARGE'],
  ])('rejects custom_metadata with %s (%#) and creates nothing', async (_label, custom, status, code) => {
    const f = file();
    const res = await create({ files: [f], custom_metadata: custom });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    if (status === 400) expect(res.body.error.details[0].path).toMatch(/^custom_metadata/);
    const rows = await h.pool.query('SELECT 1 FROM assets WHERE id = $1', [f.id]);
    expect(rows.rowCount).toBe(0);
    const outbox = await h.pool.query("SELECT 1 FROM outbox WHERE payload->>'asset_id' = $1", [f.id]);
    expect(outbox.rowCount).toBe(0);
  });

  it("refuses object keys outside the asset's own original key, and creates nothing", async () => {
    const own = file();
    const foreign = file({ object_key: `originals/3/${assetId()}` });
    const res = await create({ files: [own, foreign] });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ path: 'files.1.object_key', message: `must be originals/1/${foreign.id}` }]);
    const rows = await h.pool.query('SELECT 1 FROM assets WHERE id = ANY($1)', [[own.id, foreign.id]]);
    expect(rows.rowCount).toBe(0);
  });

  it('answers only upload, with a fresh token for this very request', async () => {
    const body = JSON.stringify({ files: [file()] });
    const post = (headers: Record<string, string>) => fetch(`${h.url}/internal/v1/assets`, { method: 'POST', headers: { ...json, ...headers }, body });
    const target = { audience: 'metadata', method: 'POST', path: '/internal/v1/assets', principal: admin, body };
    expect((await post({})).status).toBe(401);
    // The gateway is trusted but may not register originals; neither may conversion.
    expect((await post(identities.headers('gateway', target))).status).toBe(403);
    expect((await post(identities.headers('conversion', target))).status).toBe(403);
    expect((await post(identities.headers('upload', { ...target, audience: 'auth' }))).status).toBe(401);
    expect((await post(identities.headers('upload', { ...target, path: '/internal/v1/assets/exists' }))).status).toBe(401);
    const token = identities.headers('upload', target);
    expect((await post(token)).status).toBe(201);
    expect((await post(token)).status).toBe(401); // a captured token is not a second request
  });
});

describe('POST /internal/v1/assets/exists', () => {
  it("answers which of a sweep's ids have a record and which keys are their originals, for the caller's group only", async () => {
    const files = [file(), file(), file()];
    expect((await create({ files })).status).toBe(201);
    const otherGroup = file({ object_key: originalKey('2', 'x') });
    expect((await create({ files: [{ ...otherGroup, object_key: originalKey('2', otherGroup.id) }] }, principal({ group_id: 2 }))).status).toBe(201);
    // The reaper's whole sweep in one request: 1,000 ids, most of them unknown.
    const ids = [...files.map((f) => f.id), otherGroup.id, ...Array.from({ length: 996 }, () => assetId())];
    const keys = [files[1]!.object_key, originalKey('1', files[2]!.id) + '-replaced', originalKey('2', otherGroup.id)];
    const res = await signedFetch(`${h.url}/internal/v1/assets/exists`, admin, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ ids, object_keys: keys }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ existing: files.map((f) => f.id), live_keys: [files[1]!.object_key] });
  });
});

describe('GET /api/v1/assets/:id/data', () => {
  it('returns every field of the asset data format, and 404 for other groups, unknown ids and others’ assets', async () => {
    const f = file({ name: 'pic.png', content_type: 'image/png', metadata: { width: 4, height: 3 } });
    expect((await create({ files: [f], custom_metadata: { data: { a: 1 }, mode: 'REPLACE', data_schema_id: 0 } })).status).toBe(201);
    const res = await signedFetch(`${h.url}/api/v1/assets/${f.id}/data`, admin);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(assetDataSchema.strict().parse(body)).toBeTruthy();
    expect(body).toMatchObject({
      id: f.id,
      status: 'NOT_READY',
      name: 'pic.png',
      size: 11,
      checksum: f.checksum,
      content_type: 'image/png',
      creator_id: 7,
      metadata: { width: 4, height: 3 },
      data: { a: 1 },
      conversions: {},
      addons_info: {},
      urls: { public: {} },
    });
    expect(body.errors).toBeUndefined();
    expect(new Date(body.upload_time).toISOString()).toBe(body.upload_time);

    const other = await signedFetch(`${h.url}/api/v1/assets/${f.id}/data`, principal({ group_id: 2 }));
    expect(other.status).toBe(404);
    expect(((await other.json()) as any).error.code).toBe('ASSET_NOT_FOUND');
    const unknown = await signedFetch(`${h.url}/api/v1/assets/${assetId()}/data`, admin);
    expect(unknown.status).toBe(404);
    const creator = await signedFetch(`${h.url}/api/v1/assets/${f.id}/data`, principal({ role: 'CREATOR', user_id: 99 }));
    expect(creator.status).toBe(404);
    const owner = await signedFetch(`${h.url}/api/v1/assets/${f.id}/data`, principal({ role: 'CREATOR', user_id: 7 }));
    expect(owner.status).toBe(200);
  });
});

describe('an ARCHIVED asset (reserved: the specification lists the status, no endpoint sets it; issue 32)', () => {
  it('reads as ARCHIVED and answers what it is asked without a 500', async () => {
    const f = file();
    expect((await create({ files: [f] })).status).toBe(201);
    await h.pool.query(`UPDATE assets SET status = 'ARCHIVED' WHERE id = $1`, [f.id]);
    const res = await signedFetch(`${h.url}/api/v1/assets/${f.id}/data`, admin);
    expect(res.status).toBe(200);
    expect(assetDataSchema.strict().parse(await res.json()).status).toBe('ARCHIVED');
    const download = await signedFetch(`${h.url}/api/v1/assets/${f.id}/content/original/download`, admin);
    expect(download.status).toBeLessThan(500);
    await download.arrayBuffer();
    const addon = await signedFetch(`${h.url}/api/v1/assets/${f.id}/addons/auto_tagging`, admin, { method: 'POST', headers: json, body: '{}' });
    expect(addon.status).toBe(400);
    await addon.arrayBuffer();
  });
});

describe('GET /api/v1/assets/:id/content/:key/download', () => {
  const content = Buffer.from('0123456789abcdefghij'); // 20 bytes
  const md5 = createHash('md5').update(content).digest('hex');
  let id: string;

  beforeAll(async () => {
    const f = file({ name: 'résumé "final".txt', size: content.length, checksum: md5 });
    id = f.id;
    await h.storage.putBuffer(f.object_key, content, { contentType: 'text/plain' });
    expect((await create({ files: [f] })).status).toBe(201);
  });

  const get = (headers: Record<string, string> = {}, query = '', key = 'original') =>
    signedFetch(`${h.url}/api/v1/assets/${id}/content/${key}/download${query}`, admin, { headers });

  it('streams the whole original with its headers', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(content);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('content-length')).toBe('20');
    expect(res.headers.get('etag')).toBe(`"${md5}"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    const disposition = res.headers.get('content-disposition') ?? '';
    expect(disposition).toMatch(/^attachment; filename="r_sum_ _final_.txt"; filename\*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.txt$/);
  });

  it('serves inline with delivery=display', async () => {
    const res = await get({}, '?delivery=display');
    await res.arrayBuffer();
    expect(res.headers.get('content-disposition')).toMatch(/^inline; /);
  });

  it.each([
    ['bytes=2-5', '2345', 'bytes 2-5/20'],
    ['bytes=-3', 'hij', 'bytes 17-19/20'],
    ['bytes=15-', 'fghij', 'bytes 15-19/20'],
    ['bytes=15-100', 'fghij', 'bytes 15-19/20'],
  ])('answers Range %s with 206', async (range, body, contentRange) => {
    const res = await get({ range });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe(body);
    expect(res.headers.get('content-range')).toBe(contentRange);
    expect(res.headers.get('content-length')).toBe(String(body.length));
  });

  it('answers an unsatisfiable range with 416 and Content-Range bytes */size', async () => {
    const res = await get({ range: 'bytes=20-30' });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe('bytes */20');
  });

  it('ignores a syntactically invalid Range and sends the whole content (RFC 9110 §14.2)', async () => {
    for (const range of ['bytes=abc', 'bytes=5-2', 'bytes=-']) {
      const res = await get({ range });
      expect({ range, status: res.status, body: await res.text() }).toEqual({ range, status: 200, body: content.toString() });
    }
  });

  it('honours If-Range: the range while the ETag matches, the whole content once it does not', async () => {
    const same = await get({ range: 'bytes=2-5', 'if-range': `"${md5}"` });
    expect(same.status).toBe(206);
    expect(await same.text()).toBe('2345');
    const changed = await get({ range: 'bytes=2-5', 'if-range': '"an-older-version"' });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toBe(content.toString());
  });

  it('sends nosniff with every download', async () => {
    const res = await get({}, '?delivery=display');
    await res.arrayBuffer();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBeNull(); // text/plain is passive
  });

  it('serves XML, SVG and HTML only as inert attachments, even with delivery=display', async () => {
    for (const [name, type, body] of [
      ['feed.xml', 'application/xml', '<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>'],
      ['logo.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'],
      ['page.html', 'text/html', '<script>alert(1)</script>'],
    ] as const) {
      const bytes = Buffer.from(body);
      const f = file({ name, content_type: type, size: bytes.length, checksum: createHash('md5').update(bytes).digest('hex') });
      await h.storage.putBuffer(f.object_key, bytes, { contentType: type });
      expect((await create({ files: [f] })).status).toBe(201);
      const res = await signedFetch(`${h.url}/api/v1/assets/${f.id}/content/original/download?delivery=display`, admin);
      expect(await res.text()).toBe(body);
      expect({
        name,
        disposition: res.headers.get('content-disposition'),
        csp: res.headers.get('content-security-policy'),
        nosniff: res.headers.get('x-content-type-options'),
      }).toEqual({ name, disposition: `attachment; filename="${name}"`, csp: "default-src 'none'; sandbox", nosniff: 'nosniff' });
    }
  });

  it('answers If-None-Match with 304', async () => {
    const res = await get({ 'if-none-match': `"${md5}"` });
    expect(res.status).toBe(304);
  });

  it('404s unknown conversion keys and other groups', async () => {
    const res = await get({}, '', 'thumb');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('CONVERSION_NOT_FOUND');
    const other = await signedFetch(`${h.url}/api/v1/assets/${id}/content/original/download`, principal({ group_id: 3 }));
    expect(other.status).toBe(404);
  });
});
