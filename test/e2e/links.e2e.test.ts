/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { jetstream } from '@nats-io/jetstream';
import sharp from 'sharp';
import { connectNats, DAM_INTERNAL, SUBJECT_USAGE_CDN_BYTES } from '@dam/events';
import { sampleValue } from '@dam/metrics';
import { makeVideo, waitFor } from '@dam/testing';
import { ADMIN, CORE_SERVICES, login, useSuite } from './suite';

const e2e = useSuite({ transcode: { HLS_SEGMENT_SECONDS: '1' } }, { services: [...CORE_SERVICES, 'transcode'] });
const auth = (token = e2e.jwt) => ({ authorization: `Bearer ${token}` });

async function call(method: string, url: string, body?: unknown, token = e2e.jwt): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${url}`, {
    method,
    headers: { ...auth(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function upload(name: string, bytes: Buffer, token = e2e.jwt): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(token), body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
}

const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await call('GET', `/api/v1/assets/${id}/data`);
      return d.body?.status && d.body.status !== 'NOT_READY' ? d.body : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200, description: `${id} processed` },
  );

const link = async (id: string, query = ''): Promise<any> => {
  const res = await call('GET', `/api/v1/assets/${id}/get_link${query}`);
  expect([res.status, res.body]).toEqual([200, expect.objectContaining({ url: expect.any(String) })]);
  return res.body;
};

const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());
const errorCode = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe('signed links and the edge', () => {
  const original = Buffer.from('0123456789'.repeat(1000));
  let id: string;

  beforeAll(async () => {
    id = await upload('data.bin', original);
    await settled(id);
  });

  it('answers a cdn link in the specified shape with the defaults, and serves its bytes', async () => {
    const before = Math.floor(Date.now() / 1000);
    const got = await link(id);
    expect(got).toMatchObject({ id, key: 'original', link_type: 'cdn' });
    const url = new URL(got.url);
    expect(`${url.origin}`).toBe(e2e.suite.cdn);
    expect(url.pathname).toBe(`/api/v1/files/content/${id}`);
    expect([...url.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'signature']);
    expect(url.searchParams.get('key')).toBe('original');
    expect(url.searchParams.get('delivery')).toBe('download');
    const expiry = Number(url.searchParams.get('expiry'));
    expect(expiry).toBeGreaterThanOrEqual(before + 3600);
    expect(expiry).toBeLessThanOrEqual(before + 3602);
    expect(new Date(got.expires_at).getTime()).toBe(expiry * 1000);
    const me = await fetch(`${e2e.suite.base}/api/v1/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
    expect(url.searchParams.get('accessId')).toBe(((await me.json()) as { accessID: string }).accessID);

    const res = await fetch(got.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="data.bin"');
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(await bytesOf(res)).toEqual(original);
    // The second read comes from the byte cache.
    const again = await fetch(got.url);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(await bytesOf(again)).toEqual(original);
  });

  it('reads an object once from upstream however many clients miss it at the same time', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, 'x');
    const fresh = await upload('many.bin', body);
    await settled(fresh);
    const { url } = await link(fresh);
    const fills = async () => sampleValue(await (await fetch(`${e2e.suite.cdn}/metrics`)).text(), 'cdn_cache', { what: 'fills' }) ?? 0;
    const before = await fills();
    const answers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await fetch(url);
        return { status: res.status, bytes: (await bytesOf(res)).length, cache: res.headers.get('x-cache') };
      }),
    );
    expect(answers.every((a) => a.status === 200 && a.bytes === body.length)).toBe(true);
    expect(answers.filter((a) => a.cache === 'MISS')).toHaveLength(1);
    expect(await fills()).toBe(before + 1);
  });

  it('serves Range: partial, suffix, open, and 416 beyond the end', async () => {
    const { url } = await link(id, '?delivery=display');
    const part = await fetch(url, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${original.length}`);
    expect((await bytesOf(part)).toString()).toBe('0123456789');
    const suffix = await fetch(url, { headers: { range: 'bytes=-5' } });
    expect(suffix.status).toBe(206);
    expect((await bytesOf(suffix)).toString()).toBe('56789');
    const open = await fetch(url, { headers: { range: `bytes=${original.length - 3}-` } });
    expect(open.status).toBe(206);
    expect((await bytesOf(open)).toString()).toBe('789');
    const beyond = await fetch(url, { headers: { range: `bytes=${original.length}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${original.length}`);
    const display = await fetch(url);
    expect(display.headers.get('content-disposition')).toMatch(/^inline; filename="data.bin"/);
    await display.arrayBuffer();
  });

  it('refuses a link with any parameter changed, added or missing, and an expired one', async () => {
    const { url } = await link(id, '?expiry=600');
    const changed = (name: string, value: string) => {
      const u = new URL(url);
      u.searchParams.set(name, value);
      return u.toString();
    };
    const sig = new URL(url).searchParams.get('signature') as string;
    const tampered = [
      changed('key', 'thumb'),
      changed('expiry', String(Number(new URL(url).searchParams.get('expiry')) + 1)),
      changed('expiry', `0${new URL(url).searchParams.get('expiry')}`),
      changed('delivery', 'display'),
      changed('accessId', 'a'.repeat(32)),
      changed('signature', `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`),
      changed('signature', `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`),
      url.replace(`/content/${id}`, `/content/${'B'.repeat(32)}`),
      `${url}&extra=1`,
      url.replace(/&signature=[^&]+/, ''),
    ];
    for (const t of tampered) {
      const res = await fetch(t);
      expect([t, res.status]).toEqual([t, 403]);
      expect((await res.json()) as any).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    }
    const short = await link(id, '?expiry=1');
    await new Promise((r) => setTimeout(r, 2100));
    const expired = await fetch(short.url);
    expect(expired.status).toBe(403);
    expect(await errorCode(expired)).toBe('LINK_EXPIRED');
  });

  it('answers 400 over a link type maximum and for a bad expiry, 404 for a key the asset does not have', async () => {
    expect((await call('GET', `/api/v1/assets/${id}/get_link?link_type=object_storage&expiry=604801`)).status).toBe(400);
    expect((await call('GET', `/api/v1/assets/${id}/get_link?expiry=2147483647`)).status).toBe(400);
    expect((await call('GET', `/api/v1/assets/${id}/get_link?expiry=soon`)).status).toBe(400);
    expect((await call('GET', `/api/v1/assets/${id}/get_link?link_type=ftp`)).status).toBe(400);
    const max = await link(id, '?expiry=MAX');
    expect(max.expires_at).toBe('2038-01-19T03:14:07.000Z');
    const missing = await call('GET', `/api/v1/assets/${id}/get_link?key=thumb`);
    expect(missing.status).toBe(404);
    expect((await call('GET', `/api/v1/assets/${'Z'.repeat(32)}/get_link`)).status).toBe(404);
  });

  it('gives object_storage links that work without credentials, up to 7 days (MAX)', async () => {
    const got = await link(id, '?link_type=object_storage&expiry=MAX&delivery=display');
    expect(got.link_type).toBe('object_storage');
    expect(new Date(got.expires_at).getTime() / 1000).toBeCloseTo(Date.now() / 1000 + 604800, -1);
    const res = await fetch(got.url);
    expect(res.status).toBe(200);
    expect(await bytesOf(res)).toEqual(original);
  });

  it('answers bulk links per id, and 400 for 101 ids', async () => {
    const unknown = 'Q'.repeat(32);
    const res = await call('POST', '/api/v1/assets/get_link', { ids: [id, unknown], delivery: 'display' });
    expect(res.status).toBe(200);
    expect(res.body.links).toHaveLength(2);
    expect(res.body.links[0]).toMatchObject({ id, url: expect.stringContaining(`/api/v1/files/content/${id}?key=original&`), expires_at: expect.any(String) });
    expect(res.body.links[1]).toEqual({ id: unknown, error: { code: 'ASSET_NOT_FOUND', message: expect.any(String) } });
    expect((await fetch(res.body.links[0].url)).status).toBe(200);
    const tooMany = await call('POST', '/api/v1/assets/get_link', { ids: Array.from({ length: 101 }, (_, i) => String(i).padStart(32, 'a')) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('serves SVG inert: an attachment with a sandboxing CSP and nosniff, even for display', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script><rect width="10" height="10"/></svg>');
    const svgId = await upload('x.svg', svg);
    await settled(svgId);
    const { url } = await link(svgId, '?delivery=display');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    await res.arrayBuffer();
  });

  it('serves the new content after a replace, through the same link', async () => {
    const replId = await upload('r.txt', Buffer.from('first version'));
    await settled(replId);
    const { url } = await link(replId, '?delivery=display');
    expect((await bytesOf(await fetch(url))).toString()).toBe('first version');
    expect((await fetch(url)).headers.get('x-cache')).toBe('HIT');
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('second version!')]), 'r.txt');
    const replaced = await fetch(`${e2e.suite.upload}/api/v1/assets/${replId}/content/original/replace`, { method: 'POST', headers: auth(), body: form });
    expect(replaced.status).toBe(200);
    await settled(replId);
    const after = await fetch(url);
    expect(after.headers.get('x-cache')).toBe('MISS');
    expect((await bytesOf(after)).toString()).toBe('second version!');
  });

  it("stops every link of an accessID within the edge cache's short life when it is rotated or its user is disabled", async () => {
    const created = await call('POST', '/api/v1/users', { email: 'linker@example.com', password: 'linker-password-1', role_id: 3 });
    expect(created.status).toBe(201);
    const userJwt = await login(e2e.suite.base, 'linker@example.com', 'linker-password-1');
    const mine = await upload('mine.txt', Buffer.from('mine'), userJwt);
    await settled(mine);
    const first = await call('GET', `/api/v1/assets/${mine}/get_link`, undefined, userJwt);
    expect((await fetch(first.body.url)).status).toBe(200);
    const rotated = await call('POST', '/api/v1/users/me/access_id', undefined, userJwt);
    expect(rotated.status).toBe(200);
    expect(rotated.body.accessID).toMatch(/^[0-9a-f]{32}$/);
    // The edge reuses auth's answer about an accessID for CDN_ACCESS_CACHE_TTL_MS (5 s, security review F13).
    const revoked = await waitFor(
      async () => {
        const res = await fetch(first.body.url);
        if (res.status !== 403) await res.body?.cancel();
        return res.status === 403 && res;
      },
      { timeoutMs: 15_000, intervalMs: 500, description: 'the rotated link answers 403' },
    );
    expect(await errorCode(revoked)).toBe('ACCESS_REVOKED');
    const second = await call('GET', `/api/v1/assets/${mine}/get_link`, undefined, userJwt);
    expect(new URL(second.body.url).searchParams.get('accessId')).toBe(rotated.body.accessID);
    expect((await fetch(second.body.url)).status).toBe(200);
    expect((await call('PATCH', `/api/v1/users/${created.body.user_id}`, { disabled: true })).status).toBe(200);
    await waitFor(
      async () => {
        const res = await fetch(second.body.url);
        await res.body?.cancel();
        return res.status === 403;
      },
      { timeoutMs: 15_000, intervalMs: 500, description: "the disabled user's link answers 403" },
    );
  });

  it('prefetches into the byte cache and purges out of it, as jobs', async () => {
    const pid = await upload('pf.bin', Buffer.from('prefetch me '.repeat(100)));
    await settled(pid);
    const { url } = await link(pid, '?delivery=display');
    const jobDone = (jobId: number) =>
      waitFor(
        async () => {
          const job = (await call('GET', `/api/v1/jobs/${jobId}`)).body;
          return job.status === 'COMPLETED' || job.status === 'ERROR' ? job : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${jobId}` },
      );

    const prefetch = await call('POST', '/api/v1/cdn/prefetch', { urls: [url] });
    expect(prefetch).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    expect(await jobDone(prefetch.body.job_id)).toMatchObject({ type: 'cdn_prefetch', status: 'COMPLETED', asset_ids: [pid], error: null });
    const first = await fetch(url);
    expect(first.headers.get('x-cache')).toBe('HIT');
    expect((await bytesOf(first)).toString()).toBe('prefetch me '.repeat(100));

    const purge = await call('POST', '/api/v1/cdn/purge', { urls: [pid] });
    expect(purge.status).toBe(202);
    expect(await jobDone(purge.body.job_id)).toMatchObject({ type: 'cdn_purge', status: 'COMPLETED' });
    const after = await fetch(url);
    expect(after.headers.get('x-cache')).toBe('MISS');
    await after.arrayBuffer();
    // Purging one link drops that object only.
    expect((await fetch(url)).headers.get('x-cache')).toBe('HIT');
    const byLink = await call('POST', '/api/v1/cdn/purge', { urls: [url] });
    await jobDone(byLink.body.job_id);
    expect((await fetch(url)).headers.get('x-cache')).toBe('MISS');

    const bad = await call('POST', '/api/v1/cdn/purge', { urls: ['https://example.com/x', 'Z'.repeat(32)] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: any) => d.path)).toEqual(['urls.0', 'urls.1']);
    expect((await call('POST', '/api/v1/cdn/prefetch', { urls: Array.from({ length: 101 }, () => pid) })).status).toBe(400);
  });

  it('counts the bytes it served as cdn_bytes usage records of the group and user', async () => {
    const nc = await connectNats(e2e.suite.natsUrl, 'admin', e2e.suite.adminSeed);
    try {
      const consumer = await jetstream(nc).consumers.get(DAM_INTERNAL, { filter_subjects: SUBJECT_USAGE_CDN_BYTES });
      const total = await waitFor(
        async () => {
          let sum = 0;
          const batch = await consumer.fetch({ max_messages: 1000, expires: 1000 });
          for await (const m of batch) sum += (m.json() as { value: number; group_id: string; metric: string }).value;
          return sum > 0 ? sum : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 100, description: 'cdn_bytes records' },
      );
      // At least the two whole reads of the first test.
      expect(total).toBeGreaterThanOrEqual(2 * original.length);
    } finally {
      await nc.close();
    }
  });
});

describe('multi-file conversions through the edge', () => {
  it('serves a Deep Zoom pyramid: the link names image.dzi and the tiles carry the same query', async () => {
    const settings = await call('PATCH', '/api/v1/settings', { conversions: { profile: { image: ['deepzoom'] } } });
    expect(settings.status).toBe(200);
    const png = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#3366aa' } })
      .png()
      .toBuffer();
    const id = await upload('zoom.png', png);
    expect((await settled(id)).status).toBe('OK');
    const got = await link(id, '?key=deepzoom&delivery=display');
    const url = new URL(got.url);
    expect(url.pathname).toBe(`/api/v1/files/content/${id}/image.dzi`);
    const dzi = await fetch(got.url);
    expect(dzi.status).toBe(200);
    expect(await dzi.text()).toContain('TileSize="254"');
    // OpenSeadragon's rule: tiles under `<name>_files/`, with the descriptor's query string.
    const tile = await fetch(`${url.origin}${url.pathname.replace(/image\.dzi$/, 'image_files/0/0_0.jpeg')}${url.search}`);
    expect(tile.status).toBe(200);
    expect(tile.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(Buffer.from(await tile.arrayBuffer())).metadata()).format).toBe('jpeg');
    expect((await call('GET', `/api/v1/assets/${id}/get_link?key=deepzoom&link_type=object_storage`)).status).toBe(400);
  });

  it('serves HLS with every playlist entry signed, and ffprobe plays a cdn link of hls-video', async () => {
    const settings = await call('PATCH', '/api/v1/settings', { conversions: { profile: { video: ['hls-video'] } } });
    expect(settings.status).toBe(200);
    const id = await upload('clip.mp4', await makeVideo({ seconds: 3, width: 320, height: 240 }));
    expect((await settled(id)).status).toBe('OK');
    const got = await link(id, '?key=hls-video&delivery=display');
    const master = await fetch(got.url);
    expect(master.status).toBe(200);
    expect(master.headers.get('content-type')).toBe('application/vnd.apple.mpegurl');
    const text = await master.text();
    const entries = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) expect(e).toMatch(new RegExp(`^${e2e.suite.cdn}/api/v1/files/content/${id}/.+\\.m3u8\\?key=hls-video&.*&signature=`));
    const variant = await (await fetch(entries[0] as string)).text();
    const segments = variant.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(segments.length).toBeGreaterThan(0);
    const segment = await fetch(segments[0] as string);
    expect(segment.status).toBe(200);
    expect(Buffer.from(await segment.arrayBuffer()).length).toBeGreaterThan(0);
    const { stdout } = await promisify(execFile)('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', got.url]);
    expect(Number(stdout.trim())).toBeGreaterThan(2);
  });
});
