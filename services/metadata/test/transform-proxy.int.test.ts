import { createServer } from 'node:http';
import { permissionsFor, type Principal } from '@dam/auth-tokens';
import { createHttpApp, finishApp } from '@dam/http';
import { INTERNAL_PATHS } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { createBucket, listen, serviceIdentities, testS3Config } from '@dam/testing';
import { transformClient } from '../src/adapters/transform.client';
import type { Asset } from '../src/domain/asset';
import { downloadRoutes } from '../src/http/download.routes';

const logger = createLogger({ service: 'metadata-test', level: process.env.LOG_LEVEL ?? 'error' });
const reader: Principal = { user_id: 7, group_id: 1, role_id: 3, role_name: 'USER', permissions: permissionsFor('USER'), via: 'jwt' };
const asset = {
  id: 'a'.repeat(32),
  groupId: 1,
  creatorId: 9,
  name: 'animation.gif',
  size: 6000,
  checksum: 'c'.repeat(32),
  contentType: 'image/gif',
  objectKey: `originals/1/${'a'.repeat(32)}`,
  conversions: {},
  deletedAt: null,
} as unknown as Asset;

/**
 * Get Conversion with transform parameters, through metadata's real route and conversion client, against a
 * stand-in for conversion that answers as it does when every transform slot is taken (security review F5).
 */
describe("on-demand transforms through metadata: conversion's 503 and Retry-After reach the client", () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  async function serve(server: ReturnType<typeof createServer>): Promise<string> {
    const url = await listen(server);
    closers.push(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return url;
  }

  it("answers 503 with conversion's code, message and Retry-After, in the contract's error body", async () => {
    let calls = 0;
    const conversion = await serve(
      createServer((req, res) => {
        calls += 1;
        const ok = req.method === 'POST' && req.url === INTERNAL_PATHS.transforms;
        res.writeHead(ok ? 503 : 404, { 'content-type': 'application/json', ...(ok ? { 'retry-after': '7' } : {}) }).end(
          JSON.stringify({
            error: {
              code: ok ? 'TRANSFORMS_BUSY' : 'NOT_FOUND',
              message: ok ? 'Too many on-demand transforms are being made: retry after the given time' : 'no',
            },
          }),
        );
      }),
    );
    const s3 = testS3Config(await createBucket('metadata-transform-proxy'));
    const storage = createStorage({ endpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, bucket: s3.bucket, region: s3.region });
    const app = createHttpApp({ logger });
    app.use((_req, res, next) => {
      res.locals.principal = reader;
      next();
    });
    const assets = {
      findById: (groupId: number, id: string) => Promise.resolve(groupId === asset.groupId && id === asset.id ? asset : undefined),
      findManyById: () => Promise.resolve([]),
      similar: () => Promise.resolve([]),
    };
    app.use(downloadRoutes(assets, storage, logger, transformClient({ baseUrl: conversion, signer: serviceIdentities().signer('metadata') })));
    const metadata = await serve(createServer(finishApp(app, logger)));

    const res = await fetch(`${metadata}/api/v1/assets/${asset.id}/conversions/original?w=1024&h=1024&fit=fill&format=webp`);
    // Before: 503 CONVERSION_UNAVAILABLE ("The conversion service answered 503") and no Retry-After.
    expect(calls).toBe(1);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({
      error: { code: 'TRANSFORMS_BUSY', message: 'Too many on-demand transforms are being made: retry after the given time' },
    });
  });
});
