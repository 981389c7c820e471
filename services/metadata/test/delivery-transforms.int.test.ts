import { createServer, type IncomingMessage } from 'node:http';
import { permissionsFor, type Principal } from '@dam/auth-tokens';
import { createHttpApp, finishApp } from '@dam/http';
import { deliveryResponse, INTERNAL_PATHS, transformRequest, type DeliveryResponse, type TransformParams } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { createStorage, type Storage } from '@dam/storage';
import { createBucket, listen, serviceIdentities, testS3Config } from '@dam/testing';
import { transformClient } from '../src/adapters/transform.client';
import type { Asset } from '../src/domain/asset';
import { downloadRoutes } from '../src/http/download.routes';
import { internalDeliveryRoutes } from '../src/http/internal-delivery.routes';

const logger = createLogger({ service: 'metadata-test', level: process.env.LOG_LEVEL ?? 'error' });
const reader: Principal = { user_id: 7, group_id: 1, role_id: 3, role_name: 'USER', permissions: permissionsFor('USER'), via: 'jwt' };

const record = (id: string, name: string, contentType: string, conversions: Record<string, unknown> = {}) =>
  ({
    id,
    groupId: 1,
    creatorId: 9,
    name,
    size: 100,
    checksum: `${id[0]}`.repeat(32),
    contentType,
    objectKey: `originals/1/${id}`,
    conversions,
    deletedAt: null,
  }) as unknown as Asset;
const image = record('a'.repeat(32), 'photo.png', 'image/png');
const gif = record('g'.repeat(32), 'anim.gif', 'image/gif');
const video = record('v'.repeat(32), 'clip.mp4', 'video/mp4', {
  thumb: { object_key: `conversions/1/${'v'.repeat(32)}/${'v'.repeat(32)}/thumb.jpg`, content_type: 'image/jpeg' },
  storyboard: { object_key: `conversions/1/${'v'.repeat(32)}/${'v'.repeat(32)}/storyboard/sprite.jpg`, content_type: 'image/jpeg' },
});
const ASSETS = new Map([image, gif, video].map((a) => [a.id, a]));

const body = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
};

/**
 * CONTRACT §15 through metadata's internal delivery call (what the edge asks for a signed link with a transform):
 * the variant is made once by conversion (here a stand-in that stores a real image at the cache key, as conversion
 * does) and then found in storage, shared with Get Conversion; a non-image key is that asset's 400; conversion's 503
 * with Retry-After answers the call.
 */
describe('transform variants for signed links, through the internal delivery call', () => {
  const closers: Array<() => Promise<void>> = [];
  let storage: Storage;
  let metadata: string;
  const made: TransformParams[] = [];
  let busy = false;

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

  beforeAll(async () => {
    const s3 = testS3Config(await createBucket('metadata-delivery-transforms'));
    storage = createStorage({ endpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, bucket: s3.bucket, region: s3.region });
    await storage.putBuffer(image.objectKey, Buffer.from('a png'), { contentType: 'image/png' });
    await storage.putBuffer(gif.objectKey, Buffer.from('a gif'), { contentType: 'image/gif' });
    const conversion = await serve(
      createServer((req, res) => {
        void (async () => {
          if (busy) {
            res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3' });
            return void res.end(JSON.stringify({ error: { code: 'TRANSFORMS_BUSY', message: 'busy' } }));
          }
          const asked = transformRequest.parse(await body(req));
          made.push(asked.params);
          // What it was made from and how: the bytes are conversion's business (its own tests decode them).
          const out = Buffer.from(JSON.stringify({ from: (await storage.getBuffer(asked.source_key)).toString(), params: asked.params }));
          await storage.putBuffer(asked.cache_key, out, { contentType: `image/${asked.params.format}` });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ object_key: asked.cache_key, content_type: `image/${asked.params.format}`, size: out.length, made: true }));
        })();
      }),
    );
    const app = createHttpApp({ logger });
    app.use((_req, res, next) => {
      res.locals.principal = reader;
      next();
    });
    const assets = {
      findById: (groupId: number, id: string) => Promise.resolve(groupId === 1 ? ASSETS.get(id) : undefined),
      findManyById: (groupId: number, ids: readonly string[]) => Promise.resolve(groupId === 1 ? ids.flatMap((id) => ASSETS.get(id) ?? []) : []),
      similar: () => Promise.resolve([]),
    };
    const transforms = transformClient({ baseUrl: conversion, signer: serviceIdentities().signer('metadata') });
    app.use(internalDeliveryRoutes(assets, { storage, transforms }));
    app.use(downloadRoutes(assets, storage, logger, transforms));
    metadata = await serve(createServer(finishApp(app, logger)));
  });

  const deliver = async (ids: string[], key: string, transform?: Record<string, unknown>) => {
    const res = await fetch(`${metadata}${INTERNAL_PATHS.delivery}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids, key, ...(transform ? { transform } : {}) }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as DeliveryResponse };
  };

  it('makes the variant once and answers it as the target (the same object for Get Conversion with the same parameters)', async () => {
    const first = await deliver([image.id], 'original', { w: 30, fit: 'outside', h: 30, format: 'webp' });
    expect(first.status).toBe(200);
    const target = deliveryResponse.parse(first.body).items[0];
    expect(target).toMatchObject({
      id: image.id,
      target: {
        object_key: expect.stringMatching(/^conversions\/1\/a{32}\/a{32}\/_t\/[0-9a-f]{32}\.webp$/),
        content_type: 'image/webp',
        file_name: 'photo.webp',
        // What it was made from: the edge remembers the cache tier's keys under it, so a purge of the key reaches them (issue 33).
        source_object_key: image.objectKey,
      },
    });
    if (!target || !('target' in target)) throw new Error('a target was expected');
    expect(target.target.etag).toBeUndefined();
    expect(JSON.parse((await storage.getBuffer(target.target.object_key)).toString())).toEqual({
      from: 'a png',
      params: { format: 'webp', w: 30, h: 30, fit: 'outside' },
    });
    expect(made).toHaveLength(1);

    const again = await deliver([image.id], 'original', { w: 30, fit: 'outside', h: 30, format: 'webp' });
    expect(again.body.items[0]).toEqual(target);
    const viaGetConversion = await fetch(`${metadata}/api/v1/assets/${image.id}/conversions/original?w=30&h=30&fit=outside&format=webp`);
    // Get Conversion (CONTRACT §5) keeps its own fits: `outside` is a signed link's.
    expect(viaGetConversion.status).toBe(400);
    const shared = await deliver([image.id], 'original', { w: 20, format: 'png' });
    const get = await fetch(`${metadata}/api/v1/assets/${image.id}/conversions/original?w=20&format=png`);
    expect(get.status).toBe(200);
    expect(Buffer.from(await get.arrayBuffer())).toEqual(
      await storage.getBuffer((shared.body.items[0] as { target: { object_key: string } }).target.object_key),
    );
    expect(made).toHaveLength(2);
  });

  it("writes the source's own format when none is asked (format=auto without AVIF or WebP), JPEG for a source no transform writes", async () => {
    const own = await deliver([image.id], 'original', { w: 10 });
    expect(own.body.items[0]).toMatchObject({ target: { content_type: 'image/png', object_key: expect.stringMatching(/\.png$/) } });
    const fromGif = await deliver([gif.id], 'original', { w: 10 });
    expect(fromGif.body.items[0]).toMatchObject({ target: { content_type: 'image/jpeg', file_name: 'anim.jpg' } });
    expect(made.slice(-2).map((p) => p.format)).toEqual(['png', 'jpeg']);
  });

  it("refuses a transform of what is not one image as that asset's 400, and one asked for several assets", async () => {
    const before = made.length;
    expect((await deliver([video.id], 'original', { w: 10 })).body.items[0]).toMatchObject({ error: { status: 400, code: 'TRANSFORM_NOT_APPLICABLE' } });
    expect((await deliver([video.id], 'storyboard', { w: 10 })).body.items[0]).toMatchObject({ error: { status: 400, code: 'TRANSFORM_NOT_APPLICABLE' } });
    // A video's thumbnail is a static image conversion: it transforms.
    await storage.putBuffer(String((video.conversions.thumb as { object_key: string }).object_key), Buffer.from('a jpeg'), {
      contentType: 'image/jpeg',
    });
    expect((await deliver([video.id], 'thumb', { w: 10 })).body.items[0]).toMatchObject({
      target: { content_type: 'image/jpeg', source_object_key: (video.conversions.thumb as { object_key: string }).object_key },
    });
    expect(made.length).toBe(before + 1);
    expect((await deliver([image.id, gif.id], 'original', { w: 10 })).status).toBe(400);
    // Without a transform the call answers as before: the stored object itself.
    const plain = (await deliver([image.id], 'original')).body.items[0];
    expect(plain).toMatchObject({ target: { object_key: image.objectKey, etag: image.checksum } });
    expect(plain && 'target' in plain && plain.target.source_object_key).toBeUndefined();
  });

  it("answers conversion's 503 TRANSFORMS_BUSY with its Retry-After (the edge passes it on)", async () => {
    busy = true;
    try {
      const refused = await deliver([image.id], 'original', { w: 11 });
      expect(refused).toMatchObject({ status: 503, retryAfter: '3', body: { error: { code: 'TRANSFORMS_BUSY' } } });
    } finally {
      busy = false;
    }
  });
});
