import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServiceSigner, createServiceVerifier, parseSigningKey, parseTrustedKeys } from '@dam/auth-tokens';
import { UsageMeter } from '@dam/events';
import { INTERNAL_PATHS } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { createBucket, listen, serviceIdentities, startInternalStub, testS3Config, type InternalStub, type StubAnswer } from '@dam/testing';
import type { TrustProxy } from '@dam/http';
import { ByteCache } from '../src/adapters/byte-cache';
import { suiteClients } from '../src/adapters/suite.clients';
import { buildLinkSigningApp } from '../src/app';
import { accessSecret, cdnUrl, signLink, type LinkParams } from '../src/domain/link-signature';

/**
 * Security review F13: the `{cdn}` edge is public, and each hit of a valid link asked auth for its accessID and
 * metadata for the delivery. Now a burst of one link costs one auth lookup, concurrent deliveries are shared, and
 * one client address gets 429 with Retry-After beyond its budget.
 */
const identities = serviceIdentities();
const linkKey = Buffer.alloc(32, 7);
const ASSET = 'a'.repeat(32);
const ACCESS_ID = 'acc0001';
const BODY = Buffer.from('hello from the edge');
const logger = createLogger({ service: 'link-signing', level: 'silent' });

let cacheDir: string;
let bucket: string;
let objectKey: string;
let etag: string;
let auth: InternalStub;
let metadata: InternalStub;
/** The accessID's owner as auth answers it; undefined once rotated away (404). */
let owner: { user_id: number; group_id: number; role_id: number; active: boolean } | undefined;
const servers: Server[] = [];

beforeAll(async () => {
  cacheDir = await mkdtemp(path.join(tmpdir(), 'edge-limits-'));
  bucket = await createBucket('edge-limits');
  objectKey = `1/${ASSET}/original`;
  etag = (await createStorage(testS3Config(bucket)).putBuffer(objectKey, BODY, { contentType: 'text/plain' })).etag;
  const answer =
    (fn: (method: string, p: string) => StubAnswer | undefined) =>
    (method: string, p: string): StubAnswer | undefined => {
      const a = fn(method, p);
      // Slow enough that a burst overlaps the first lookup: what a busy auth looks like.
      return a && { ...a, delayMs: 100 };
    };
  auth = await startInternalStub({
    identities,
    service: 'auth',
    callers: ['link-signing'],
    answer: answer((method, p) =>
      method === 'GET' && p === INTERNAL_PATHS.accessOwner(ACCESS_ID) ? (owner ? { status: 200, body: owner } : undefined) : undefined,
    ),
  });
  metadata = await startInternalStub({
    identities,
    service: 'metadata',
    callers: ['link-signing'],
    answer: answer((method, p) =>
      method === 'POST' && p === INTERNAL_PATHS.delivery
        ? {
            status: 200,
            body: {
              items: [
                {
                  id: ASSET,
                  target: { group_id: 1, asset_id: ASSET, object_key: objectKey, content_type: 'text/plain', file_name: 'a.txt', size: BODY.length, etag },
                },
              ],
            },
          }
        : undefined,
    ),
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
});

let n = 0;
async function startEdge(
  opts: {
    edgeLimit?: { perMinute: number; burst: number };
    edgeReplicas?: () => number;
    accessCacheTtlMs?: number;
    trustProxy?: TrustProxy;
    now?: () => number;
  } = {},
) {
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
    trustProxy: opts.trustProxy ?? false,
    ...opts,
  });
  const server = createServer(app);
  servers.push(server);
  const base = await listen(server);
  const params: LinkParams = { key: 'original', expiry: 2_000_000_000, delivery: 'display', accessId: ACCESS_ID };
  const link = cdnUrl(base, ASSET, params, signLink(accessSecret(linkKey, ACCESS_ID), ASSET, params));
  return { base, link };
}

const counts = () => ({ auth: auth.calls(INTERNAL_PATHS.accessOwner(ACCESS_ID)), delivery: metadata.calls(INTERNAL_PATHS.delivery) });

describe('{cdn} edge under a burst of one link (security review F13)', () => {
  it('150 concurrent GETs of one link cost one auth lookup, and fewer delivery calls than requests', async () => {
    const { link } = await startEdge({ accessCacheTtlMs: 60_000 });
    const before = counts();
    const N = 150;
    const answers = await Promise.all(
      Array.from({ length: N }, async () => {
        const res = await fetch(link);
        return { status: res.status, body: await res.text() };
      }),
    );
    expect(answers.filter((a) => a.status === 200 && a.body === BODY.toString()).length).toBe(N);
    const after = counts();
    const used = { auth: after.auth - before.auth, delivery: after.delivery - before.delivery };
    // Before the fix: 150 and 150.
    expect(used.auth).toBe(1);
    expect(used.delivery).toBeLessThan(N / 2);
    // Later requests within the TTL ask auth nothing more.
    expect((await fetch(link)).status).toBe(200);
    expect(counts().auth - before.auth).toBe(1);
  });

  it('a rotated accessID stops its links once the short cache has expired', async () => {
    let clock = Date.now();
    const { link } = await startEdge({ accessCacheTtlMs: 5000, now: () => clock });
    expect((await fetch(link)).status).toBe(200);
    owner = undefined; // auth no longer knows the accessID (rotated)
    expect((await fetch(link)).status).toBe(200); // within the TTL: still cached
    clock += 5001;
    const res = await fetch(link);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('ACCESS_REVOKED');
  });

  it('answers 429 with Retry-After and the contract body beyond the budget of one client address', async () => {
    const { link } = await startEdge({ edgeLimit: { perMinute: 60, burst: 5 } });
    for (let i = 0; i < 5; i++) expect((await fetch(link)).status).toBe(200);
    // Another X-Forwarded-For does not buy a new budget when no proxy is trusted.
    const res = await fetch(link, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
    // Refused before the link is checked: a tampered link costs nothing either.
    expect((await fetch(link.replace('signature=', 'signature=x'))).status).toBe(429);
  });

  it('honours TRUST_PROXY: behind one trusted proxy each forwarded client has its own budget', async () => {
    const { link } = await startEdge({ edgeLimit: { perMinute: 60, burst: 2 }, trustProxy: 1 });
    const from = (ip: string) => fetch(link, { headers: { 'x-forwarded-for': ip } }).then((r) => r.status);
    expect([await from('198.51.100.1'), await from('198.51.100.1'), await from('198.51.100.1')]).toEqual([200, 200, 429]);
    expect(await from('198.51.100.2')).toBe(200);
  });
});

describe('{cdn} edge over several replicas (issue 31, D9: budgets are totals)', () => {
  it("spreads one address's budget over the replicas: two of them behind a round robin admit it once", async () => {
    // CDN_RATE_LIMIT_ADDRESS_BURST 4 in all, two replicas (RATE_LIMIT_REPLICAS=2): each admits 2.
    const edges = [
      await startEdge({ edgeLimit: { perMinute: 60, burst: 4 }, edgeReplicas: () => 2 }),
      await startEdge({ edgeLimit: { perMinute: 60, burst: 4 }, edgeReplicas: () => 2 }),
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await fetch((edges[i % 2] as { link: string }).link)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.slice(4)).toEqual([429, 429, 429, 429]);
  });
});
