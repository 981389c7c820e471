import { randomBytes } from 'node:crypto';
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
 * Issue 33 (the byte paths' CPU): an edge byte-cache hit is sent from the cached file through two buffers reused for
 * the whole file. Before, a read stream allocated a new 1 MiB buffer per read, and those allocations made V8 collect
 * the whole heap every ~64 MiB (1.67 CPU s/GiB on bench/byte-cpu.bench.ts). The bytes, ranges and counted usage stay
 * as they were.
 */
const identities = serviceIdentities();
const linkKey = Buffer.alloc(32, 9);
const ASSET = 'f'.repeat(32);
const ACCESS_ID = 'acc0033';
const BODY = randomBytes(5 * 1024 * 1024 + 123);
const logger = createLogger({ service: 'link-signing', level: 'silent' });

let cacheDir: string;
let auth: InternalStub;
let metadata: InternalStub;
let server: Server;
let link: string;
/** The distinct memory blocks the body of each request was written from, by URL (with its Range). */
const written = new Map<string, Set<ArrayBufferLike>>();
const usage = new UsageMeter('cdn_bytes');

beforeAll(async () => {
  cacheDir = await mkdtemp(path.join(tmpdir(), 'edge-file-body-'));
  const bucket = await createBucket('edge-file-body');
  const storage = createStorage(testS3Config(bucket));
  const objectKey = `1/${ASSET}/original`;
  const { etag } = await storage.putBuffer(objectKey, BODY, { contentType: 'application/octet-stream' });
  const target = { group_id: 1, asset_id: ASSET, object_key: objectKey, content_type: 'application/octet-stream', file_name: 'a.bin', size: BODY.length, etag };
  auth = await startInternalStub({
    identities,
    service: 'auth',
    callers: ['link-signing'],
    answer: (method, p) =>
      method === 'GET' && p === INTERNAL_PATHS.accessOwner(ACCESS_ID)
        ? { status: 200, body: { user_id: 5, group_id: 1, role_id: 1, active: true } }
        : undefined,
  });
  metadata = await startInternalStub({
    identities,
    service: 'metadata',
    callers: ['link-signing'],
    answer: (method, p) => (method === 'POST' && p === INTERNAL_PATHS.delivery ? { status: 200, body: { items: [{ id: ASSET, target }] } } : undefined),
  });
  const cache = new ByteCache(path.join(cacheDir, 'c'), 64 * 1024 * 1024, 64 * 1024 * 1024);
  await cache.init();
  const app = buildLinkSigningApp({
    logger,
    verifier: createServiceVerifier({ service: 'link-signing', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) }),
    clients: suiteClients({
      authUrl: auth.url,
      metadataUrl: metadata.url,
      signer: createServiceSigner(parseSigningKey(identities.privateKey('link-signing'))),
    }),
    storage,
    cache,
    usage,
    cdnBase: 'http://cdn.invalid',
    signingKeys: [linkKey],
    trustProxy: false,
    accessCacheTtlMs: 0,
  });
  server = createServer((req, res) => {
    const blocks = new Set<ArrayBufferLike>();
    written.set(`${req.url} ${req.headers.range ?? ''}`, blocks);
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk)) blocks.add(chunk.buffer);
      return write(chunk, ...rest);
    }) as typeof res.write;
    app(req, res);
  });
  const base = await listen(server);
  const params: LinkParams = { key: 'original', expiry: 2_000_000_000, delivery: 'display', accessId: ACCESS_ID };
  link = cdnUrl(base, ASSET, params, signLink(accessSecret(linkKey, ACCESS_ID), ASSET, params));
  // The first read fills the byte cache.
  const miss = await fetch(link);
  expect(miss.headers.get('x-cache')).toBe('MISS');
  expect(Buffer.from(await miss.arrayBuffer()).equals(BODY)).toBe(true);
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await auth.close();
  await metadata.close();
  await rm(cacheDir, { recursive: true, force: true });
});

const blocksOf = (range = '') => written.get(`${new URL(link).pathname}${new URL(link).search} ${range}`)?.size;

describe('an edge byte-cache hit (issue 33)', () => {
  it('sends the whole file from two reused buffers, not a new buffer per read', async () => {
    const hit = await fetch(link);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(hit.headers.get('content-length')).toBe(String(BODY.length));
    expect(Buffer.from(await hit.arrayBuffer()).equals(BODY)).toBe(true);
    // Six reads of up to 1 MiB: a read stream writes them from six blocks.
    expect(blocksOf()).toBeLessThanOrEqual(2);
  });

  it('sends a range across the buffers exactly, and the last byte alone', async () => {
    const range = `bytes=1048000-${3 * 1048576 + 77}`;
    const part = await fetch(link, { headers: { range } });
    expect(part.status).toBe(206);
    expect(part.headers.get('x-cache')).toBe('HIT');
    expect(Buffer.from(await part.arrayBuffer()).equals(BODY.subarray(1048000, 3 * 1048576 + 78))).toBe(true);
    expect(blocksOf(range)).toBeLessThanOrEqual(2);

    const last = await fetch(link, { headers: { range: 'bytes=-1' } });
    expect(last.status).toBe(206);
    expect(Buffer.from(await last.arrayBuffer()).equals(BODY.subarray(BODY.length - 1))).toBe(true);
  });

  it('stops reading when the client goes, and serves the next request whole', async () => {
    const controller = new AbortController();
    const res = await fetch(link, { signal: controller.signal });
    const reader = res.body?.getReader();
    await reader?.read();
    controller.abort();
    await reader?.cancel().catch(() => undefined);
    const again = await fetch(link);
    expect(Buffer.from(await again.arrayBuffer()).equals(BODY)).toBe(true);
  });
});
