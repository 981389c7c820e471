/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { freePort, scaled, waitFor } from '@dam/testing';
import { startCdnCache, type RunningCdnCache } from '../../deploy/cache/nginx-cdn';
import { useSuite } from './suite';

/**
 * Issue 33: the nginx cache tier (deploy/cache) in front of `{cdn}`, as deploy/local/up runs it: Get Link hands out
 * links on the tier (PUBLIC_CDN_URL), a second GET is a hit, a Range is served from the cached slices, a replaced
 * original, a conversion added again and a CDN purge job's asset are purged from the tier at once (a MISS, not an
 * expiry), and a revoked link, refused by the edge at once, is served by the tier for at most N = CDN_MAX_AGE seconds
 * and then refused there too.
 */
const MAX_AGE = 4;
let tierPort = 0;
let purgePort = 0;
let dir = '';
let tier: RunningCdnCache;

beforeAll(async () => {
  tierPort = await freePort();
  purgePort = await freePort();
  dir = await mkdtemp(path.join(tmpdir(), 'cache-tier-'));
});

const e2e = useSuite(
  () => ({
    'link-signing': {
      CDN_MAX_AGE: String(MAX_AGE),
      PUBLIC_CDN_URL: `http://127.0.0.1:${tierPort}`,
      CDN_TIER_PURGE_URLS: `http://127.0.0.1:${purgePort}/purge`,
      // The edge asks auth every time: it refuses a rotated accessID at once.
      CDN_ACCESS_CACHE_TTL_MS: '0',
    },
  }),
  { services: ['upload', 'conversion', 'link-signing'] },
);

beforeAll(async () => {
  tier = await startCdnCache({ upstream: new URL(e2e.suite.cdn).host, port: tierPort, purgePort, dir });
});

afterAll(async () => {
  await tier?.stop();
  if (!process.env.KEEP_CACHE_TIER_DIR) await rm(dir, { recursive: true, force: true }); // its error.log tells what nginx saw
});

const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${url}`, {
    method,
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function upload(name: string, bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
  expect(res.status).toBe(200);
  const id = ((await res.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
  await waitFor(
    async () => {
      const d = await call('GET', `/api/v1/assets/${id}/data`);
      return d.body?.status && d.body.status !== 'NOT_READY' ? d.body : undefined;
    },
    { timeoutMs: scaled(60_000), intervalMs: 200, description: `${id} processed` },
  );
  return id;
}

async function linkOf(id: string, transform = ''): Promise<string> {
  const res = await call('GET', `/api/v1/assets/${id}/get_link?delivery=display${transform}`);
  expect(res.status).toBe(200);
  return res.body.url as string;
}

const get = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, cache: res.headers.get('x-cache-status'), body: Buffer.from(await res.arrayBuffer()) };
};

describe('the nginx cache tier in front of {cdn}', () => {
  const big = randomBytes(3 * 1024 * 1024 + 123);
  let bigId: string;
  let bigUrl: string;

  beforeAll(async () => {
    bigId = await upload('big.bin', big);
    bigUrl = await linkOf(bigId);
  });

  it('hands out links on the tier; the first GET is a miss, the next a hit, both with the edge cache headers', async () => {
    expect(new URL(bigUrl).origin).toBe(tier.url);
    const first = await get(bigUrl);
    expect([first.status, first.cache]).toEqual([200, 'MISS']);
    expect(first.body.equals(big)).toBe(true);
    expect(first.headers.get('cache-control')).toMatch(/^public, max-age=[0-4]$/);
    const second = await get(bigUrl);
    expect([second.status, second.cache]).toEqual([200, 'HIT']);
    expect(second.body.equals(big)).toBe(true);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
  });

  it('serves a Range across slices from the cache', async () => {
    const url = await linkOf(bigId);
    // Cached by now (a miss, or the entry above, or its refresh once past max-age).
    expect((await get(url)).status).toBe(200);
    const part = await get(url, { range: 'bytes=1048570-2097160' });
    expect([part.status, part.cache]).toEqual([206, 'HIT']);
    expect(part.headers.get('content-range')).toBe(`bytes 1048570-2097160/${big.length}`);
    expect(part.body.equals(big.subarray(1048570, 2097161))).toBe(true);
    const tail = await get(url, { range: 'bytes=-100' });
    expect([tail.status, tail.cache]).toEqual([206, 'HIT']);
    expect(tail.body.equals(big.subarray(big.length - 100))).toBe(true);
  });

  it('drops a replaced original at once: the next answer is a miss with the new bytes, not an expiry', async () => {
    const id = await upload('r.txt', Buffer.from('first version'));
    const url = await linkOf(id);
    expect((await get(url)).body.toString()).toBe('first version');
    expect((await get(url)).cache).toBe('HIT');
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('second version!')]), 'r.txt');
    const replaced = await fetch(`${e2e.suite.upload}/api/v1/assets/${id}/content/original/replace`, { method: 'POST', headers: auth(), body: form });
    expect(replaced.status).toBe(200);
    const after = await waitFor(
      async () => {
        const res = await get(url);
        return res.body.toString() !== 'first version' && res;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: 'the tier serves the replaced original' },
    );
    expect(after.body.toString()).toBe('second version!');
    // EXPIRED would mean the entry only ran out (max-age); MISS means the purge deleted it.
    expect(after.cache).toBe('MISS');
  });

  it('drops a conversion added again under its name at once (file-processed): a miss with the new bytes', async () => {
    // Before (issue 33), only file-saved and file-deleted purged the tier: Add Conversion writes the same object key
    // again, and the tier served the old bytes until max-age (then EXPIRED), while the edge served the new ones.
    const id = await upload('c.txt', Buffer.from('an asset'));
    const add = async (text: string) => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.from(text)]), 'extra.txt');
      const res = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/extra`, { method: 'POST', headers: auth(), body: form });
      expect([200, 202]).toContain(res.status);
    };
    await add('conversion one');
    const link = await call('GET', `/api/v1/assets/${id}/get_link?key=extra&delivery=display`);
    expect(link.status).toBe(200);
    const url = link.body.url as string;
    expect((await get(url)).body.toString()).toBe('conversion one');
    expect((await get(url)).cache).toBe('HIT');
    await add('conversion two!');
    const after = await waitFor(
      async () => {
        const res = await get(url);
        return res.body.toString() !== 'conversion one' && res;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: 'the tier serves the conversion added again' },
    );
    expect([after.status, after.cache, after.body.toString()]).toEqual([200, 'MISS', 'conversion two!']);
  });

  it('drops an asset purged by a CDN purge job (POST /api/v1/cdn/purge) from the tier', async () => {
    const id = await upload('purged.txt', Buffer.from('purge me'));
    const url = await linkOf(id);
    await get(url);
    expect((await get(url)).cache).toBe('HIT');
    const purge = await call('POST', '/api/v1/cdn/purge', { urls: [id] });
    expect(purge.status).toBe(202);
    const job = await waitFor(
      async () => {
        const j = (await call('GET', `/api/v1/jobs/${purge.body.job_id}`)).body;
        return j.status === 'COMPLETED' || j.status === 'ERROR' ? j : undefined;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: 'the purge job' },
    );
    expect(job.status).toBe('COMPLETED');
    // Every edge replica hears the purge and tells the tier (dam.internal.cdn.evict): the next answer is a miss.
    const next = await waitFor(
      async () => {
        const res = await get(url);
        return res.cache !== 'HIT' && res;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: 'the tier drops the purged asset' },
    );
    expect([next.status, next.cache, next.body.toString()]).toEqual([200, 'MISS', 'purge me']);
  });

  it('serves a revoked link for at most N seconds, while the edge itself refuses it at once', async () => {
    const id = await upload('revoked.txt', Buffer.from('soon revoked'));
    const url = await linkOf(id);
    expect((await get(url)).cache).toBe('MISS');
    const rotated = await call('POST', '/api/v1/users/me/access_id');
    expect(rotated.status).toBe(200);
    const revokedAt = Date.now();
    const direct = await get(url.replace(tier.url, e2e.suite.cdn));
    expect(direct.status).toBe(403);
    expect(direct.headers.get('cache-control')).toBe('no-store');
    const refused = await waitFor(
      async () => {
        const res = await get(url);
        if (res.status === 200) expect(res.body.toString()).toBe('soon revoked');
        return res.status !== 200 && res;
      },
      { timeoutMs: scaled((MAX_AGE + 10) * 1000), intervalMs: 200, description: 'the tier refuses the revoked link' },
    );
    const servedFor = (Date.now() - revokedAt) / 1000;
    expect(refused.status).toBe(403);
    expect(servedFor).toBeLessThanOrEqual(MAX_AGE + 1.5);
    // A refusal is not kept: it is asked again, and still refused.
    expect((await get(url)).status).toBe(403);
  });
});

describe('transformed and format=auto links through the tier (issue 33)', () => {
  const AVIF = 'image/avif,image/webp,image/apng,*/*;q=0.8';
  const WEBP = 'image/webp,*/*;q=0.8';
  const png = (r: number) =>
    sharp({ create: { width: 96, height: 64, channels: 3, background: { r, g: 90, b: 30 } } })
      .png()
      .toBuffer();
  let id: string;
  /** A transformed link, and a format=auto link fetched by a browser that takes AVIF and by one that takes WebP. */
  let views: Array<{ name: string; url: string; headers: Record<string, string>; type: string }>;

  beforeAll(async () => {
    id = await upload('photo.png', await png(200));
  });

  /**
   * Every view from the tier (links of their own: `expiry` is part of the key): the first a miss, the next a hit with
   * the same bytes (and Vary: Accept for format=auto).
   */
  async function cached(expiry: number): Promise<Buffer[]> {
    const sized = await linkOf(id, `&w=64&format=webp&expiry=${expiry}`);
    const auto = await linkOf(id, `&w=48&format=auto&expiry=${expiry}`);
    views = [
      { name: 'w=64&format=webp', url: sized, headers: {}, type: 'image/webp' },
      { name: 'format=auto, AVIF', url: auto, headers: { accept: AVIF }, type: 'image/avif' },
      { name: 'format=auto, WebP', url: auto, headers: { accept: WEBP }, type: 'image/webp' },
    ];
    // The variants are made (conversion) through the edge first, so that the tier's entries are all a moment old.
    for (const v of views) expect((await get(v.url.replace(tier.url, e2e.suite.cdn), v.headers)).status).toBe(200);
    const first = [];
    for (const v of views) first.push(await get(v.url, v.headers));
    const bodies: Buffer[] = [];
    for (const [i, v] of views.entries()) {
      expect([v.name, first[i]?.cache]).toEqual([v.name, 'MISS']);
      const again = await get(v.url, v.headers);
      expect([v.name, again.status, again.cache, again.headers.get('content-type')]).toEqual([v.name, 200, 'HIT', v.type]);
      expect(again.body.equals(first[i]?.body as Buffer)).toBe(true);
      if (v.headers.accept) expect(again.headers.get('vary')).toMatch(/\bAccept\b/);
      bodies.push(again.body);
    }
    // Two variants of one link, two entries.
    expect(bodies[1]?.equals(bodies[2] as Buffer)).toBe(false);
    return bodies;
  }

  /**
   * After a purge, each view is a miss at once (the purge deleted its entry; an expiry would say EXPIRED). Before
   * issue 33's fix, a format=auto link's other Accept stayed a HIT (nginx kept it in a Vary file of its own, which the
   * purge of the key left), and a purge job naming the key left every transform of it.
   */
  async function purged(before: Buffer[], changed: boolean): Promise<Buffer[]> {
    const [v0, ...rest] = views as [(typeof views)[0], ...typeof views];
    const first = await waitFor(
      async () => {
        const res = await get(v0.url, v0.headers);
        return res.cache !== 'HIT' && res;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: `the tier drops ${v0.name}` },
    );
    const all = [first];
    // One purge names every key of the asset: the others are gone too.
    for (const v of rest) all.push(await get(v.url, v.headers));
    for (const [i, v] of views.entries()) {
      const res = all[i] as (typeof all)[0];
      expect([v.name, res.status, res.cache, res.headers.get('content-type')]).toEqual([v.name, 200, 'MISS', v.type]);
      expect([v.name, res.body.equals(before[i] as Buffer)]).toEqual([v.name, !changed]);
    }
    return all.map((r) => r.body);
  }

  it('drops every transform and format=auto variant of a replaced original at once, and of a key a CDN purge job names', async () => {
    const old = await cached(3600);
    const form = new FormData();
    form.append('file', new Blob([await png(20)]), 'photo.png');
    const replaced = await fetch(`${e2e.suite.upload}/api/v1/assets/${id}/content/original/replace`, { method: 'POST', headers: auth(), body: form });
    expect(replaced.status).toBe(200);
    const fresh = await purged(old, true);

    // A purge job naming the transformed link (its key: the original) reaches every transform of that key.
    const kept = await cached(3500);
    expect(kept.map((b, i) => b.equals(fresh[i] as Buffer))).toEqual([true, true, true]);
    const purge = await call('POST', '/api/v1/cdn/purge', { urls: [views[0]?.url] });
    expect(purge.status).toBe(202);
    const job = await waitFor(
      async () => {
        const j = (await call('GET', `/api/v1/jobs/${purge.body.job_id}`)).body;
        return j.status === 'COMPLETED' || j.status === 'ERROR' ? j : undefined;
      },
      { timeoutMs: scaled(20_000), intervalMs: 100, description: 'the purge job' },
    );
    expect(job.status).toBe('COMPLETED');
    await purged(kept, false);
  });
});
