import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServiceSigner, createServiceVerifier, parseSigningKey, parseTrustedKeys } from '@dam/auth-tokens';
import { UsageMeter } from '@dam/events';
import { INTERNAL_PATHS, type DeliveryRequest } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { createBucket, listen, serviceIdentities, startInternalStub, testS3Config, type InternalStub } from '@dam/testing';
import { ByteCache } from '../src/adapters/byte-cache';
import { suiteClients } from '../src/adapters/suite.clients';
import { buildLinkSigningApp } from '../src/app';
import { accessSecret, cdnUrl, signLink, type LinkParams, type LinkTransform } from '../src/domain/link-signature';

/**
 * CONTRACT §15 at the edge, through its HTTP app and its real metadata client: a signed transform reaches metadata
 * (format=auto resolved from Accept), the variant is served with Vary: Accept, and conversion's 503 TRANSFORMS_BUSY
 * (security review F5) reaches the client with its Retry-After.
 */
const identities = serviceIdentities();
const linkKey = Buffer.alloc(32, 9);
const ASSET = 'b'.repeat(32);
const ACCESS_ID = 'acc-transforms';
const VARIANT = Buffer.from('variant bytes');
const SOURCE = `originals/1/${ASSET}/a.png`;
const logger = createLogger({ service: 'link-signing', level: 'silent' });

let cacheDir: string;
let variantKey: string;
let auth: InternalStub;
let metadata: Server;
let base: string;
/** The same edge with a cache tier in front: what it is told to remember. */
let tiered: string;
const recorded: Array<{ key: string; objectKeys: readonly string[] }> = [];
const asked: DeliveryRequest[] = [];
const servers: Server[] = [];

const readBody = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
};

beforeAll(async () => {
  cacheDir = await mkdtemp(path.join(tmpdir(), 'edge-transforms-'));
  const bucket = await createBucket('edge-transforms');
  const storage = createStorage(testS3Config(bucket));
  variantKey = `conversions/1/${ASSET}/sum/_t/${'1'.repeat(32)}.webp`;
  await storage.putBuffer(variantKey, VARIANT, { contentType: 'image/webp' });
  auth = await startInternalStub({
    identities,
    service: 'auth',
    callers: ['link-signing'],
    answer: (method, p) =>
      method === 'GET' && p === INTERNAL_PATHS.accessOwner(ACCESS_ID)
        ? { status: 200, body: { user_id: 5, group_id: 1, role_id: 1, active: true } }
        : undefined,
  });
  // metadata as the edge sees it: the variant for a transform, conversion's 503 passed on for w=13.
  metadata = createServer((req, res) => {
    void (async () => {
      const body = (await readBody(req)) as DeliveryRequest;
      asked.push(body);
      if (body.transform?.w === 13) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '9' });
        return void res.end(JSON.stringify({ error: { code: 'TRANSFORMS_BUSY', message: 'Too many on-demand transforms are being made' } }));
      }
      const target = body.transform
        ? { object_key: variantKey, content_type: 'image/webp', file_name: 'a.webp', source_object_key: SOURCE }
        : { object_key: variantKey, content_type: 'image/png', file_name: 'a.png', size: VARIANT.length, etag: 'orig' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: [{ id: ASSET, target: { group_id: 1, asset_id: ASSET, ...target } }] }));
    })();
  });
  const metadataUrl = await listen(metadata);
  const cache = new ByteCache(path.join(cacheDir, 'c'), 1024 * 1024, 1024 * 1024);
  await cache.init();
  const app = buildLinkSigningApp({
    logger,
    verifier: createServiceVerifier({ service: 'link-signing', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) }),
    clients: suiteClients({ authUrl: auth.url, metadataUrl, signer: createServiceSigner(parseSigningKey(identities.privateKey('link-signing'))) }),
    storage,
    cache,
    usage: new UsageMeter('cdn_bytes'),
    cdnBase: 'http://cdn.invalid',
    signingKeys: [linkKey],
    trustProxy: false,
  });
  const server = createServer(app);
  servers.push(server);
  base = await listen(server);
  const tierApp = buildLinkSigningApp({
    logger,
    verifier: createServiceVerifier({ service: 'link-signing', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) }),
    clients: suiteClients({ authUrl: auth.url, metadataUrl, signer: createServiceSigner(parseSigningKey(identities.privateKey('link-signing'))) }),
    storage,
    cache,
    usage: new UsageMeter('cdn_bytes'),
    cdnBase: 'http://cdn.invalid',
    signingKeys: [linkKey],
    trustProxy: false,
    tier: { record: (key, _assetId, objectKeys) => void recorded.push({ key, objectKeys }) },
  });
  const tierServer = createServer(tierApp);
  servers.push(tierServer);
  tiered = await listen(tierServer);
});

afterAll(async () => {
  await Promise.all([...servers, metadata].map((s) => new Promise((resolve) => s.close(resolve))));
  await auth.close();
  await rm(cacheDir, { recursive: true, force: true });
});

const link = (transform: LinkTransform) => {
  const params: LinkParams = { key: 'original', expiry: 2_000_000_000, delivery: 'display', accessId: ACCESS_ID, transform };
  return cdnUrl(base, ASSET, params, signLink(accessSecret(linkKey, ACCESS_ID), ASSET, params));
};

describe('{cdn} edge: transforms in signed links (CONTRACT §15)', () => {
  it('asks metadata for the signed transform and serves the variant it names', async () => {
    const res = await fetch(link({ w: 100, format: 'webp', q: 60 }));
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'image/webp']);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(VARIANT);
    expect(res.headers.get('vary')).toBeNull();
    expect(asked.at(-1)).toEqual({ ids: [ASSET], key: 'original', transform: { w: 100, format: 'webp', q: 60 } });
    // Tampered: refused before metadata is asked.
    const before = asked.length;
    expect((await fetch(link({ w: 100, format: 'webp', q: 60 }).replace('w=100', 'w=101'))).status).toBe(403);
    expect(asked.length).toBe(before);
  });

  it('resolves format=auto from Accept and says Vary: Accept', async () => {
    const url = link({ w: 50, format: 'auto' });
    const avif = await fetch(url, { headers: { accept: 'image/avif,image/webp,*/*' } });
    expect([avif.status, avif.headers.get('vary')]).toEqual([200, 'Accept']);
    await avif.arrayBuffer();
    expect(asked.at(-1)?.transform).toEqual({ w: 50, format: 'avif' });
    const any = await fetch(url, { headers: { accept: '*/*' } });
    expect([any.status, any.headers.get('vary')]).toEqual([200, 'Accept']);
    await any.arrayBuffer();
    // No format: metadata writes the source's own.
    expect(asked.at(-1)?.transform).toEqual({ w: 50 });
  });

  it("tells the cache tier a transform's key under its variant and the object it was made from (a purge of the key reaches it)", async () => {
    // Issue 33: remembered under the variant alone, a CDN purge job naming the link's key (its object) missed it.
    const url = new URL(link({ w: 100, format: 'webp', q: 60 }).replace(base, tiered));
    const key = `${url.pathname}${url.search}bytes=0-1048575`;
    recorded.length = 0;
    const res = await fetch(url, { headers: { 'x-cache-key': key, range: 'bytes=0-1048575' } });
    await res.arrayBuffer();
    expect(res.status).toBe(206);
    expect(recorded).toEqual([{ key, objectKeys: [variantKey, SOURCE] }]);
  });

  it('lets the tier keep a format=auto answer only under a key naming its Accept class (X-Accel-Expires: 0 otherwise)', async () => {
    // Issue 33: nginx kept one file per Accept string (Vary), which a purge of the key left in place; the key now
    // ends with the Accept class (deploy/cache's map), and an answer under another class's key is not kept.
    const url = new URL(link({ w: 50, format: 'auto' }).replace(base, tiered));
    const key = `${url.pathname}${url.search}bytes=0-1048575`;
    const fetched = async (accept: string, tierKey: string) => {
      recorded.length = 0;
      const res = await fetch(url, { headers: { accept, 'x-cache-key': tierKey } });
      await res.arrayBuffer();
      return [res.status, res.headers.get('vary'), res.headers.get('x-accel-expires'), recorded.map((r) => r.key)];
    };
    expect(await fetched('image/avif,image/webp,*/*', `${key} accept=avif`)).toEqual([200, 'Accept', null, [`${key} accept=avif`]]);
    expect(await fetched('image/webp,*/*', `${key} accept=webp`)).toEqual([200, 'Accept', null, [`${key} accept=webp`]]);
    expect(await fetched('image/png', `${key} accept=other`)).toEqual([200, 'Accept', null, [`${key} accept=other`]]);
    // The class nginx put it in is not the edge's (here: avif with q=0), or nginx saw no format=auto.
    expect(await fetched('image/avif;q=0,image/webp', `${key} accept=avif`)).toEqual([200, 'Accept', '0', []]);
    expect(await fetched('image/webp', key)).toEqual([200, 'Accept', '0', []]);
  });

  it("answers conversion's 503 TRANSFORMS_BUSY with its Retry-After (security review F5's bound, passed through)", async () => {
    const res = await fetch(link({ w: 13 }));
    // Before the edge passed it on: 503 METADATA_UNAVAILABLE without Retry-After.
    expect([res.status, res.headers.get('retry-after')]).toEqual([503, '9']);
    expect(await res.json()).toEqual({ error: { code: 'TRANSFORMS_BUSY', message: 'Too many on-demand transforms are being made' } });
  });
});
