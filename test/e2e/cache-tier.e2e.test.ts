/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, scaled, waitFor } from '@dam/testing';
import { startCdnCache, type RunningCdnCache } from '../../deploy/cache/nginx-cdn';
import { useSuite } from './suite';

/**
 * Issue 33: the nginx cache tier (deploy/cache) in front of `{cdn}`, as deploy/local/up runs it: Get Link hands out
 * links on the tier (PUBLIC_CDN_URL), a second GET is a hit, a Range is served from the cached slices, a replaced
 * original and a CDN purge job's asset are purged from the tier at once (a MISS, not an expiry), and a revoked link, refused by the edge at once,
 * is served by the tier for at most N = CDN_MAX_AGE seconds and then refused there too.
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

async function linkOf(id: string): Promise<string> {
  const res = await call('GET', `/api/v1/assets/${id}/get_link?delivery=display`);
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
