import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServiceSigner, createServiceVerifier, parseSigningKey, parseTrustedKeys, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { UsageMeter } from '@dam/events';
import { INTERNAL_PATHS } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage, storageConfigFromEnv } from '@dam/storage';
import { createBucket, listen, s3Env, serviceIdentities, startInternalStub, testS3Config, type InternalStub } from '@dam/testing';
import { ByteCache } from '../src/adapters/byte-cache';
import { suiteClients } from '../src/adapters/suite.clients';
import { buildLinkSigningApp } from '../src/app';
import { loadLinkSigningConfig } from '../src/config';

/**
 * Kubernetes review D4: `object_storage` links were presigned for S3_ENDPOINT (`http://minio:9000`), an address only
 * the cluster reaches; Signature V4 covers the host, so no proxy can move them. Now they are signed for
 * S3_PUBLIC_ENDPOINT. One S3 server under two names stands in for both: the services reach it as 127.0.0.1, clients
 * as localhost.
 */
const identities = serviceIdentities();
const logger = createLogger({ service: 'link-signing', level: 'silent' });
const ASSET = 'b'.repeat(32);
const BODY = Buffer.from('bytes fetched from the public host');
const admin: Principal = { user_id: 1, group_id: 1, role_id: 1, role_name: ROLE_NAMES[1] ?? 'ADMIN', permissions: permissionsFor(1), via: 'jwt' };

let bucket: string;
let internal: URL;
let publicEndpoint: string;
let metadata: InternalStub;
let auth: InternalStub;
let server: Server;
let base: string;
let cacheDir: string;

beforeAll(async () => {
  bucket = await createBucket('object-storage-links');
  internal = new URL(testS3Config(bucket).endpoint);
  if (internal.hostname !== '127.0.0.1') throw new Error(`the test S3 server is expected on 127.0.0.1, not ${internal.hostname}`);
  publicEndpoint = `${internal.protocol}//localhost:${internal.port}`;
  const objectKey = `1/${ASSET}/original`;
  const seed = createStorage(testS3Config(bucket));
  const { etag } = await seed.putBuffer(objectKey, BODY, { contentType: 'text/plain' });
  metadata = await startInternalStub({
    identities,
    service: 'metadata',
    callers: ['link-signing'],
    answer: (method, p) =>
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
  });
  auth = await startInternalStub({ identities, service: 'auth', callers: ['link-signing'], answer: () => undefined });

  // Configured as main.ts configures it: the environment through the service's schema, then storageConfigFromEnv.
  const config = loadLinkSigningConfig({
    ...s3Env(bucket),
    S3_PUBLIC_ENDPOINT: publicEndpoint,
    ...identities.env('link-signing'),
    LINK_SIGNING_KEYS: 'ab'.repeat(32),
  });
  cacheDir = await mkdtemp(path.join(tmpdir(), 'object-storage-links-'));
  const cache = new ByteCache(cacheDir, 1024 * 1024, 1024 * 1024);
  await cache.init();
  const app = buildLinkSigningApp({
    logger,
    verifier: createServiceVerifier({ service: 'link-signing', trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])) }),
    clients: suiteClients({
      authUrl: auth.url,
      metadataUrl: metadata.url,
      signer: createServiceSigner(parseSigningKey(identities.privateKey('link-signing'))),
    }),
    storage: createStorage(storageConfigFromEnv(config)),
    cache,
    usage: new UsageMeter('cdn_bytes'),
    cdnBase: 'http://cdn.invalid',
    signingKeys: config.LINK_SIGNING_KEYS,
    trustProxy: false,
  });
  server = createServer(app);
  base = await listen(server);
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await metadata?.close();
  await auth?.close();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

async function getLink(query: string): Promise<{ status: number; body: { url?: string; link_type?: string } }> {
  const p = `/api/v1/assets/${ASSET}/get_link?${query}`;
  const res = await fetch(`${base}${p}`, { headers: identities.headers('gateway', { audience: 'link-signing', method: 'GET', path: p, principal: admin }) });
  return { status: res.status, body: (await res.json()) as { url?: string; link_type?: string } };
}

describe('object_storage links are presigned for S3_PUBLIC_ENDPOINT (Kubernetes review D4)', () => {
  it('hands out a URL on the public host that serves the bytes; moved to the internal host, its signature fails', async () => {
    const { status, body } = await getLink('link_type=object_storage&delivery=download&expiry=600');
    expect(status).toBe(200);
    const url = new URL(body.url ?? '');
    // Before the fix: 127.0.0.1:<port>, the address only the services reach.
    expect(url.host).toBe(new URL(publicEndpoint).host);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);

    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(BODY);

    // The signature covers the host: the same URL sent to the server's other name is refused.
    const moved = new URL(url);
    moved.host = internal.host;
    const refused = await fetch(moved);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('SignatureDoesNotMatch');
  });
});
