import { createHash, randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { createDamClient, type components } from '@dam/client';
import { waitFor } from '@dam/testing';
import { watchAssetEvents, type SeenEvent } from './events';
import { ADMIN, login, useSuite } from './suite';

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

// The document's own types (libs/client, generated from docs/openapi.yaml): the answers are checked against them.
type UploadedFile = components['schemas']['UploadResult']['files'][number];
type AssetData = components['schemas']['AssetData'];

const e2e = useSuite();
let events: Awaited<ReturnType<typeof watchAssetEvents>>;
let png: Buffer;
let binary: Buffer;
let files: UploadedFile[];

const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
  png = await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 80, b: 20 } } })
    .png()
    .toBuffer();
  binary = randomBytes(20 * 1024 * 1024);

  const form = new FormData();
  // Client-declared types are wrong on purpose: the service sniffs the bytes.
  form.append('file1', new Blob([png], { type: 'application/octet-stream' }), 'photo.png');
  form.append('file2', new Blob([binary], { type: 'image/jpeg' }), 'random.bin');
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
  const body = (await res.json()) as { files: UploadedFile[]; success: boolean; provider: string };
  expect(res.status).toBe(200);
  expect(body.success).toBe(true);
  expect(body.provider).toBe('local');
  files = body.files;
});

e2e.beforeStop(() => events?.close());

const byName = (name: string) => {
  const f = files.find((x) => x.name === name);
  if (!f) throw new Error(`no uploaded file named ${name}`);
  return f;
};

async function getData(id: string, token = e2e.jwt): Promise<{ status: number; body: AssetData }> {
  const { response, data, error } = await createDamClient({ baseUrl: e2e.suite.base, token }).GET('/api/v1/assets/{asset_id}/data', {
    params: { path: { asset_id: id } },
  });
  return { status: response.status, body: (data ?? error) as AssetData };
}

describe('the first asset, end to end', () => {
  it('answers the upload with one asset per file, sniffed types and local checksums', () => {
    expect(files).toHaveLength(2);
    for (const f of files) {
      expect(f.id).toMatch(/^[A-Za-z0-9]{32}$/);
      expect(f.status).toBe('NOT_READY');
    }
    expect(byName('photo.png')).toMatchObject({ size: png.length, checksum: md5(png), content_type: 'image/png', metadata: { width: 640, height: 480 } });
    expect(byName('random.bin')).toMatchObject({ size: binary.length, checksum: md5(binary), content_type: 'application/octet-stream' });
  });

  it('announces file-saved then file-processed on ASSET_EVENTS for each asset', async () => {
    const forAsset = (id: string): SeenEvent[] => events.seen.filter((e) => e.asset_id === id);
    for (const f of files) {
      await waitFor(() => forAsset(f.id).some((e) => e.type === 'file-processed'), { timeoutMs: 60000 });
      const seen = forAsset(f.id);
      expect(seen.map((e) => e.type)).toEqual(['file-saved', 'file-processed']);
      expect(seen.map((e) => e.status)).toEqual(['NOT_READY', 'OK']);
      expect(seen[0]?.subject).toBe('assets.events.1.file-saved');
      expect(seen[1]?.subject).toBe('assets.events.1.file-processed');
      // Each later event describes a later version of the asset.
      expect(seen[0]?.version).toBe(1);
      expect(seen[1]?.version).toBeGreaterThan(1);
    }
  });

  it('reaches OK with the thumbnail conversion listed', async () => {
    const image = byName('photo.png');
    await waitFor(async () => (await getData(image.id)).body.status === 'OK', { timeoutMs: 60000 });
    const { status, body } = await getData(image.id);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: image.id,
      name: 'photo.png',
      size: png.length,
      checksum: md5(png),
      content_type: 'image/png',
      creator_id: expect.any(Number),
      metadata: { width: 640, height: 480 },
      data: {},
      addons_info: expect.any(Object),
    });
    expect(Date.parse(body.upload_time)).not.toBeNaN();
    expect(Date.parse(body.update_time)).not.toBeNaN();
    expect(body.conversions.thumb).toEqual({ width: 200, height: 200, size: expect.any(Number), public: false });
    expect(body.conversions.thumb?.size).toBeGreaterThan(0);

    const other = await getData(byName('random.bin').id);
    expect(other.body.status).toBe('OK');
    expect(other.body.conversions).toEqual({});
  });

  it('lists the processing job of the image, completed, through {base}', async () => {
    const image = byName('photo.png');
    const res = await fetch(`${e2e.suite.base}/api/v1/jobs?type=processing&page_size=100`, { headers: auth() });
    expect(res.status).toBe(200);
    const list = (await res.json()) as { items: Array<{ job_id: number; asset_ids: string[]; status: string }>; total: number };
    const job = list.items.find((j) => j.asset_ids.includes(image.id));
    expect(job).toMatchObject({ status: 'COMPLETED' });
    // Nothing processes the binary file: no job for it.
    expect(list.items.some((j) => j.asset_ids.includes(byName('random.bin').id))).toBe(false);
    const one = await fetch(`${e2e.suite.base}/api/v1/jobs/${job?.job_id}`, { headers: auth() });
    expect(await one.json()).toMatchObject({ job_id: job?.job_id, type: 'processing', status: 'COMPLETED', progress: 100 });
  });

  it('downloads the full content byte for byte, and a range', async () => {
    for (const [name, bytes] of [
      ['photo.png', png],
      ['random.bin', binary],
    ] as const) {
      const res = await fetch(`${e2e.suite.base}/api/v1/assets/${byName(name).id}/content/original/download`, { headers: auth() });
      expect(res.status).toBe(200);
      expect(res.headers.get('etag')).toContain(md5(bytes));
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(res.headers.get('content-disposition')).toContain(name);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    }
    const ranged = await fetch(`${e2e.suite.base}/api/v1/assets/${byName('random.bin').id}/content/original/download`, {
      headers: { ...auth(), range: 'bytes=0-99' },
    });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-range')).toBe(`bytes 0-99/${binary.length}`);
    const part = Buffer.from(await ranged.arrayBuffer());
    expect(part.length).toBe(100);
    expect(part.equals(binary.subarray(0, 100))).toBe(true);
  });

  it('downloads the thumbnail conversion as a 200x200 WebP', async () => {
    const res = await fetch(`${e2e.suite.base}/api/v1/assets/${byName('photo.png').id}/content/thumb/download`, { headers: auth() });
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 200, height: 200 });
  });

  it('keeps one trace from the upload request through conversion to the OK report', () => {
    const id = byName('photo.png').id;
    const lines = (svc: string) =>
      (e2e.suite.services[svc]?.logs() ?? []).flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
    const traceOf = (svc: string, pick: (l: Record<string, unknown>) => boolean) => lines(svc).find(pick)?.trace_id;
    const uploadTrace = traceOf('upload', (l) => (l.req as { url?: string } | undefined)?.url === '/api/v1/assets/new/content/original/upload');
    expect(uploadTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(traceOf('conversion', (l) => l.msg === 'conversion started' && l.asset_id === id)).toBe(uploadTrace);
    expect(traceOf('metadata', (l) => l.msg === 'job report applied' && l.asset_id === id && l.state === 'COMPLETED')).toBe(uploadTrace);
  });

  it("hides one group's assets from another group's admin (404)", async () => {
    const created = await fetch(`${e2e.suite.base}/api/v1/groups`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Second', admin: { email: 'second@example.com', password: 'second-password', first_name: 'Sec', last_name: 'Ond' } }),
    });
    expect(created.status).toBe(201);
    const otherJwt = await login(e2e.suite.base, 'second@example.com', 'second-password');
    const { status, body } = await getData(byName('photo.png').id, otherJwt);
    expect(status).toBe(404);
    expect(body).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    const download = await fetch(`${e2e.suite.base}/api/v1/assets/${byName('photo.png').id}/content/original/download`, {
      headers: { authorization: `Bearer ${otherJwt}` },
    });
    expect(download.status).toBe(404);
    // Nor can it use one as its watermark: auth asks metadata whether the asset is the group's own.
    const patch = (jwt: string) =>
      fetch(`${e2e.suite.base}/api/v1/settings`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
        body: JSON.stringify({ conversions: { watermark_asset_id: byName('photo.png').id } }),
      });
    const foreign = await patch(otherJwt);
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toMatchObject({ error: { code: 'VALIDATION_FAILED', details: [{ path: 'conversions.watermark_asset_id' }] } });
    expect((await patch(e2e.jwt)).status).toBe(200);
  });

  it('answers 401 without credentials, on both public addresses', async () => {
    const res = await fetch(`${e2e.suite.base}/api/v1/assets/${byName('photo.png').id}/data`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    const up = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', body: new FormData() });
    expect(up.status).toBe(401);
  });

  it('answers malformed JSON to login with 400 and the error body', async () => {
    const res = await fetch(`${e2e.suite.base}/api/v1/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email": "a@b.c", ' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { code: 'INVALID_JSON', message: expect.any(String) } });
  });

  it('answers a NUL character with 400, on unauthenticated login and in a path', async () => {
    const login = await fetch(`${e2e.suite.base}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a\u0000@b.c', password: 'x' }),
    });
    expect(login.status).toBe(400);
    expect(await login.json()).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });
    const data = await fetch(`${e2e.suite.base}/api/v1/assets/abc%00def/data`, { headers: { authorization: `Bearer ${e2e.jwt}` } });
    expect(data.status).toBe(400);
  });

  it('writes no credential to any log line of any service', async () => {
    // The JWT as the `_jwt` query parameter, as the specification allows for validate.
    const validate = await fetch(`${e2e.suite.base}/api/v1/auth/validate?_jwt=${e2e.jwt}`);
    expect(validate.status).toBe(200);
    // The validate request was logged, with the value redacted (waited for: lines come through the children's pipes).
    await waitFor(() => Object.values(e2e.suite.services).some((s) => s.logs().some((l) => l.includes('_jwt=[redacted]'))), {
      description: 'the validate request logged',
    });
    const signature = e2e.jwt.split('.')[2] ?? e2e.jwt;
    for (const [name, service] of Object.entries(e2e.suite.services)) {
      const leaks = service.logs().filter((line) => line.includes(signature) || line.includes(ADMIN.password));
      expect({ name, leaks }).toEqual({ name, leaks: [] });
    }
  });
});
