import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServiceSigner, createServiceVerifier, parseSigningKey, parseTrustedKeys } from '@dam/auth-tokens';
import { UsageMeter } from '@dam/events';
import { INTERNAL_PATHS } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { createBucket, listen, serviceIdentities, startInternalStub, testS3Config, type InternalStub } from '@dam/testing';
import { ByteCache } from '../src/adapters/byte-cache';
import { suiteClients } from '../src/adapters/suite.clients';
import { buildLinkSigningApp } from '../src/app';
import { accessSecret, cdnUrl, signLink, type LinkParams } from '../src/domain/link-signature';

/**
 * CONTRACT §15, third bullet: every `{cdn}` answer a shared cache may keep (200, 206, 304, playlists) says
 * `Cache-Control: public, max-age=N` (N = min(seconds left of the link, CDN_MAX_AGE)) with a strong ETag and
 * Last-Modified, and answers If-None-Match / If-Modified-Since with 304; refusals are kept by no shared cache.
 * Before: `private, no-cache` on every answer, no Last-Modified, and errors without any Cache-Control.
 */
const identities = serviceIdentities();
const linkKey = Buffer.alloc(32, 9);
const ASSET = 'c'.repeat(32);
const ACCESS_ID = 'acc0033';
const BODY = Buffer.from('0123456789'.repeat(100));
const PLAYLIST = '#EXTM3U\n#EXT-X-VERSION:3\n#EXTINF:4.0,\nseg0.ts\n#EXT-X-ENDLIST\n';
const logger = createLogger({ service: 'link-signing', level: 'silent' });

let cacheDir: string;
let bucket: string;
let etag: string;
let auth: InternalStub;
let metadata: InternalStub;
let owner: { user_id: number; group_id: number; role_id: number; active: boolean } | undefined;
/** What metadata answers for the asset: the original, or an HLS folder. */
let target: Record<string, unknown>;
let original: Record<string, unknown>;
const servers: Server[] = [];

beforeAll(async () => {
  cacheDir = await mkdtemp(path.join(tmpdir(), 'edge-cache-headers-'));
  bucket = await createBucket('edge-cache-headers');
  const storage = createStorage(testS3Config(bucket));
  const objectKey = `1/${ASSET}/original`;
  etag = (await storage.putBuffer(objectKey, BODY, { contentType: 'application/octet-stream' })).etag;
  await storage.putBuffer(`1/${ASSET}/hls/index.m3u8`, Buffer.from(PLAYLIST), { contentType: 'application/vnd.apple.mpegurl' });
  original = { group_id: 1, asset_id: ASSET, object_key: objectKey, content_type: 'application/octet-stream', file_name: 'a.bin', size: BODY.length, etag };
  auth = await startInternalStub({
    identities,
    service: 'auth',
    callers: ['link-signing'],
    answer: (method, p) => (method === 'GET' && p === INTERNAL_PATHS.accessOwner(ACCESS_ID) && owner ? { status: 200, body: owner } : undefined),
  });
  metadata = await startInternalStub({
    identities,
    service: 'metadata',
    callers: ['link-signing'],
    answer: (method, p) => (method === 'POST' && p === INTERNAL_PATHS.delivery ? { status: 200, body: { items: [{ id: ASSET, target }] } } : undefined),
  });
});

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  await auth.close();
  await metadata.close();
  await rm(cacheDir, { recursive: true, force: true });
});

beforeEach(() => {
  owner = { user_id: 5, group_id: 1, role_id: 1, active: true };
  target = original;
});

let n = 0;
async function startEdge(opts: { cdnMaxAgeSeconds?: number } = {}) {
  const cache = new ByteCache(path.join(cacheDir, `c${++n}`), 1024 * 1024, 1024 * 1024);
  await cache.init();
  const signer = createServiceSigner(parseSigningKey(identities.privateKey('link-signing')));
  const app = buildLinkSigningApp({
    logger,
    verifier: createServiceVerifier({ service: 'link-signing', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) }),
    clients: suiteClients({ authUrl: auth.url, metadataUrl: metadata.url, signer }),
    storage: createStorage(testS3Config(bucket)),
    cache,
    usage: new UsageMeter('cdn_bytes'),
    cdnBase: 'http://cdn.invalid',
    signingKeys: [linkKey],
    trustProxy: false,
    accessCacheTtlMs: 0,
    ...opts,
  });
  const server = createServer(app);
  servers.push(server);
  const base = await listen(server);
  const linkOf = (expiry: number, key = 'original', file?: string) => {
    const params: LinkParams = { key, expiry, delivery: 'display', accessId: ACCESS_ID };
    return cdnUrl(base, ASSET, params, signLink(accessSecret(linkKey, ACCESS_ID), ASSET, params), file);
  };
  return { linkOf };
}

const maxAgeOf = (res: Response): number => {
  const m = /^public, max-age=(\d+)$/.exec(res.headers.get('cache-control') ?? '');
  if (!m) throw new Error(`not a shared-cache answer: Cache-Control ${res.headers.get('cache-control')}`);
  return Number(m[1]);
};
const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('{cdn} answers shared caches may keep (CONTRACT §15)', () => {
  it('200: public, max-age=CDN_MAX_AGE for a far expiry, a strong ETag and Last-Modified', async () => {
    const { linkOf } = await startEdge();
    const res = await fetch(linkOf(2_000_000_000));
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(BODY)).toBe(true);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300'); // the default CDN_MAX_AGE
    expect(res.headers.get('etag')).toBe(`"${etag}"`);
    const lastModified = Date.parse(res.headers.get('last-modified') ?? '');
    expect(Number.isFinite(lastModified)).toBe(true);
    expect(Math.abs(lastModified - Date.now())).toBeLessThan(10 * 60_000);
    expect(res.headers.get('access-control-expose-headers')).toContain('Last-Modified');
  });

  it('N is the seconds left of the link when fewer than CDN_MAX_AGE, else CDN_MAX_AGE', async () => {
    const { linkOf } = await startEdge({ cdnMaxAgeSeconds: 120 });
    const soon = await fetch(linkOf(nowSeconds() + 42));
    await soon.arrayBuffer();
    expect(maxAgeOf(soon)).toBeLessThanOrEqual(42);
    expect(maxAgeOf(soon)).toBeGreaterThanOrEqual(30);
    const far = await fetch(linkOf(nowSeconds() + 3600));
    await far.arrayBuffer();
    expect(maxAgeOf(far)).toBe(120);
  });

  it('If-None-Match and If-Modified-Since answer 304 with the same caching headers; an older date gets the bytes', async () => {
    const { linkOf } = await startEdge();
    const link = linkOf(2_000_000_000);
    const first = await fetch(link);
    await first.arrayBuffer();
    const lastModified = first.headers.get('last-modified') as string;

    const byTag = await fetch(link, { headers: { 'if-none-match': `"${etag}"` } });
    expect(byTag.status).toBe(304);
    expect(byTag.headers.get('cache-control')).toBe('public, max-age=300');
    expect(byTag.headers.get('etag')).toBe(`"${etag}"`);
    expect(byTag.headers.get('last-modified')).toBe(lastModified);

    const byDate = await fetch(link, { headers: { 'if-modified-since': lastModified } });
    expect(byDate.status).toBe(304);
    expect(byDate.headers.get('cache-control')).toBe('public, max-age=300');

    const older = await fetch(link, { headers: { 'if-modified-since': new Date(Date.parse(lastModified) - 60_000).toUTCString() } });
    expect(older.status).toBe(200);
    expect((await older.arrayBuffer()).byteLength).toBe(BODY.length);
    // Another tag wins over a matching date (If-Modified-Since counts only without If-None-Match).
    const otherTag = await fetch(link, { headers: { 'if-none-match': '"other"', 'if-modified-since': lastModified } });
    expect(otherTag.status).toBe(200);
    await otherTag.arrayBuffer();
  });

  it('206 keeps the caching headers; If-Range with the ETag keeps the range, another validator gets the whole object', async () => {
    const { linkOf } = await startEdge();
    const link = linkOf(2_000_000_000);
    const part = await fetch(link, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${BODY.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(BODY.subarray(10, 20))).toBe(true);
    expect(part.headers.get('cache-control')).toBe('public, max-age=300');
    expect(part.headers.get('etag')).toBe(`"${etag}"`);
    expect(part.headers.get('last-modified')).toBeTruthy();

    const same = await fetch(link, { headers: { range: 'bytes=0-4', 'if-range': `"${etag}"` } });
    expect(same.status).toBe(206);
    await same.arrayBuffer();
    const changed = await fetch(link, { headers: { range: 'bytes=0-4', 'if-range': '"older"' } });
    expect(changed.status).toBe(200);
    expect((await changed.arrayBuffer()).byteLength).toBe(BODY.length);
  });

  it("answers the cache tier's slice of an empty object with the empty object, not 416", async () => {
    const storage = createStorage(testS3Config(bucket));
    const emptyKey = `1/${ASSET}/empty`;
    const emptyEtag = (await storage.putBuffer(emptyKey, Buffer.alloc(0), { contentType: 'application/octet-stream' })).etag;
    target = { ...original, object_key: emptyKey, size: 0, etag: emptyEtag };
    const { linkOf } = await startEdge();
    const link = linkOf(2_000_000_000);
    const key = new URL(link).pathname + new URL(link).search + 'bytes=0-1048575';
    const res = await fetch(link, { headers: { range: 'bytes=0-1048575', 'x-cache-key': key } });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
  });

  it('a playlist is kept like any answer: public max-age, a strong ETag of its body, 304 on If-None-Match', async () => {
    const { linkOf } = await startEdge();
    target = {
      ...original,
      object_key: `1/${ASSET}/hls/index.m3u8`,
      content_type: 'application/vnd.apple.mpegurl',
      file_name: 'index.m3u8',
      folder: `1/${ASSET}/hls/`,
    };
    delete target.size;
    delete target.etag;
    const link = linkOf(2_000_000_000, 'hls');
    const res = await fetch(link);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('seg0.ts?');
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    const tag = res.headers.get('etag') ?? '';
    expect(tag).toMatch(/^"[^"]+"$/);
    const again = await fetch(link, { headers: { 'if-none-match': tag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('cache-control')).toBe('public, max-age=300');
  });

  it('refusals are kept by no shared cache: tampered (403), revoked (403), gone (404), expired (403)', async () => {
    const { linkOf } = await startEdge();
    const link = linkOf(2_000_000_000);
    const tampered = await fetch(link.replace('delivery=display', 'delivery=download'));
    expect(tampered.status).toBe(403);
    expect(tampered.headers.get('cache-control')).toBe('no-store');
    await tampered.arrayBuffer();

    const expired = await fetch(linkOf(nowSeconds() - 5));
    expect(expired.status).toBe(403);
    expect(expired.headers.get('cache-control')).toBe('no-store');
    await expired.arrayBuffer();

    target = { ...original, object_key: `1/${ASSET}/missing`, size: undefined, etag: undefined };
    const gone = await fetch(link);
    expect(gone.status).toBe(404);
    expect(gone.headers.get('cache-control')).toBe('no-store');
    await gone.arrayBuffer();

    target = original;
    owner = undefined;
    const revoked = await fetch(link);
    expect(revoked.status).toBe(403);
    expect(revoked.headers.get('cache-control')).toBe('no-store');
    await revoked.arrayBuffer();
  });
});
