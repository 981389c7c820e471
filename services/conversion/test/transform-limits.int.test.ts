import { createServer } from 'node:http';
import sharp from 'sharp';
import { createServiceVerifier, parseTrustedKeys } from '@dam/auth-tokens';
import { internalClient, INTERNAL_PATHS, transformResponse, type TransformParams } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { conversionsPrefix, createStorage, type Storage } from '@dam/storage';
import { createBucket, listen, scaled, serviceIdentities, testS3Config } from '@dam/testing';
import { ImageProcessor } from '../src/adapters/image-processor';
import { storageTransformVariants } from '../src/adapters/transform-variants';
import { buildConversionApp } from '../src/app';
import { TransformsBusyError } from '../src/domain/conversion.errors';
import { transformer, type TransformLimits } from '../src/use-cases/transform.use-case';

jest.setTimeout(scaled(120_000));

const identities = serviceIdentities();
const logger = createLogger({ service: 'conversion-test', level: process.env.LOG_LEVEL ?? 'error' });
const DEFAULTS: TransformLimits = {
  maxOutputPixels: 64 * 1024 * 1024,
  concurrency: 2,
  queue: 16,
  queueWaitMs: 10_000,
  retryAfterSeconds: 2,
  maxVariants: 50,
};

/** An animated GIF of `frames` noisy 16x16 frames (a few KB): the original of the review's request. */
const animatedGif = (frames: number): Promise<Buffer> =>
  sharp({ create: { width: 16, height: 16 * frames, pageHeight: 16, channels: 3, background: '#336699', noise: { type: 'gaussian', mean: 128, sigma: 30 } } })
    .gif()
    .toBuffer();

const png = (width: number, height: number): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background: { r: 30, g: 120, b: 200 } } })
    .png()
    .toBuffer();

let assets = 0;
/** A fresh asset: its original's key and the cache keys of its transforms, as metadata names them. */
function newAsset() {
  assets += 1;
  const folder = conversionsPrefix('g1', `asset${assets}`, `sum${assets}`);
  return {
    source: `originals/g1/asset${assets}`,
    folder,
    variants: `${folder}_t/`,
    cacheKey: (i: number, ext = 'webp') => `${folder}_t/${i.toString(16).padStart(32, '0')}.${ext}`,
  };
}

interface Observer {
  arrived?: (cacheKey: string, result: Promise<unknown>) => void;
}

/** Resolves `wait` when the first caller reaches `enter()` and blocks it until `open()`. */
function gate() {
  let entered!: () => void;
  let opened!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  const released = new Promise<void>((resolve) => (opened = resolve));
  return { reached, open: () => opened(), enter: () => (entered(), released) };
}

describe('on-demand transforms: what one request may cost (security review F5; real sharp and S3)', () => {
  let storage: Storage;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    const s3 = testS3Config(await createBucket('conversion-transforms'));
    storage = createStorage({ endpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, bucket: s3.bucket, region: s3.region });
  });

  afterAll(async () => {
    for (const close of closers) await close();
  });

  /** The conversion app with these limits (reading originals through `reads`), called as metadata calls it. */
  async function start(limits: Partial<TransformLimits> = {}, reads: Storage = storage, observe: Observer = {}) {
    const transform = transformer({
      logger,
      storage: reads,
      variants: storageTransformVariants(storage),
      images: new ImageProcessor(),
      limits: { ...DEFAULTS, ...limits },
    });
    const app = buildConversionApp({
      logger,
      readiness: () => Promise.resolve({}),
      verifier: createServiceVerifier({ service: 'conversion', trusted: parseTrustedKeys(identities.trustedKeys(['metadata'])) }),
      // The use case as the route calls it: the test learns when a request reached it, and what it gave the route.
      transform: (source, cacheKey, params, gone) => {
        const result = transform(source, cacheKey, params, gone);
        observe.arrived?.(cacheKey, result);
        return result;
      },
    });
    const server = createServer(app);
    const url = await listen(server);
    closers.push(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const client = internalClient({ baseUrl: url, audience: 'conversion', signer: identities.signer('metadata'), timeoutMs: scaled(60_000) });
    const call = (source: string, cacheKey: string, params: TransformParams) =>
      client.call({ method: 'POST', path: INTERNAL_PATHS.transforms, body: { source_key: source, cache_key: cacheKey, params }, response: transformResponse });
    return { call, url };
  }

  it('counts every frame of an animated result against the pixel limit: 70 frames of 1024x1024 (73.4 MP) are refused', async () => {
    const { call } = await start();
    const asset = newAsset();
    const gif = await animatedGif(70);
    expect(gif.length).toBeLessThan(100_000);
    expect((await sharp(gif).metadata()).pages).toBe(70);
    await storage.putBuffer(asset.source, gif, { contentType: 'image/gif' });

    // Before: 200 and a 70-frame 1024x1024 WebP (73.4 MP over the 67.1 MP limit), after seconds of CPU.
    const refused = await call(asset.source, asset.cacheKey(1), { format: 'webp', w: 1024, h: 1024, fit: 'fill' });
    expect(refused).toMatchObject({
      ok: false,
      status: 400,
      error: { code: 'TRANSFORM_FAILED', message: expect.stringMatching(/1024x1024 x 70 frames, over 67108864 pixels/) },
    });
    expect(await storage.stat(asset.cacheKey(1))).toBeNull();

    // Within the limit the animation is kept, every frame; a format of one frame counts one.
    const small = await call(asset.source, asset.cacheKey(2), { format: 'webp', w: 64, h: 64, fit: 'fill' });
    expect(small).toMatchObject({ ok: true, status: 200, body: { object_key: asset.cacheKey(2), made: true } });
    const made = await sharp(await storage.getBuffer(asset.cacheKey(2)), { animated: true }).metadata();
    expect({ width: made.width, pages: made.pages, pageHeight: made.pageHeight ?? made.height }).toEqual({ width: 64, pages: 70, pageHeight: 64 });
    const still = await call(asset.source, asset.cacheKey(3, 'png'), { format: 'png', w: 1024, h: 1024, fit: 'fill' });
    expect(still).toMatchObject({ ok: true, status: 200 });
  });

  it('fits outside the box (CONTRACT §15, a signed link may ask for it): the smaller side reaches its side of the box, the ratio kept', async () => {
    const { call } = await start();
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    // Before: 400 VALIDATION_FAILED, `outside` was not a fit the internal API took.
    const made = await call(asset.source, asset.cacheKey(1, 'png'), { format: 'png', w: 30, h: 30, fit: 'outside' });
    expect(made).toMatchObject({ ok: true, status: 200, body: { object_key: asset.cacheKey(1, 'png'), content_type: 'image/png', made: true } });
    expect(await sharp(await storage.getBuffer(asset.cacheKey(1, 'png'))).metadata()).toMatchObject({ format: 'png', width: 45, height: 30 });
  });

  it('makes at most TRANSFORM_CONCURRENCY transforms at once: with no queue (TRANSFORM_QUEUE 0) one more answers 503 TRANSFORMS_BUSY with Retry-After', async () => {
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    // The first transform holds its slot while it reads the original, until the test lets it go on.
    const { held, slow } = holdFirstRead();
    const { call } = await start({ concurrency: 1, queue: 0, retryAfterSeconds: 3 }, slow);

    const first = call(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    await held.reached;
    // The same transform again waits for the one being made (no slot of its own)...
    const same = call(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    try {
      // ...another one finds no free slot. Before: made at once (200), however many arrived.
      const busy = await call(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 });
      expect(busy).toEqual({ ok: false, status: 503, retryAfter: '3', error: { code: 'TRANSFORMS_BUSY', message: expect.any(String) } });
      expect(await storage.stat(asset.cacheKey(2))).toBeNull();
    } finally {
      held.open();
    }
    expect(await first).toMatchObject({ ok: true, body: { made: true } });
    expect(await same).toMatchObject({ ok: true, body: { object_key: asset.cacheKey(1), made: false } });
    // The slot is free again.
    expect(await call(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 })).toMatchObject({ ok: true, body: { made: true } });
  });

  /** Storage whose first read of an original is held until `held.open()`: the first transform keeps its slot. */
  function holdFirstRead() {
    const held = gate();
    let reads = 0;
    const slow: Storage = {
      ...storage,
      getStream: async (key) => {
        reads += 1;
        if (reads === 1) await held.enter();
        return storage.getStream(key);
      },
    };
    return { held, slow, reads: () => reads };
  }

  /** The cache keys that reached the use case with what it answered the route, and a wait for the n-th. */
  function tally() {
    const seen: Array<{ key: string; result: Promise<unknown> }> = [];
    let wake = () => {};
    return {
      seen,
      note: (key: string, result: Promise<unknown>) => (seen.push({ key, result }), wake()),
      until: async (n: number) => {
        while (seen.length < n) await new Promise<void>((resolve) => (wake = resolve));
      },
    };
  }

  it('waits for a slot instead of refusing at once (issue 35): with TRANSFORM_CONCURRENCY 1 a second transform is made after the first (200, not 503), and the same variant asked while it waits shares it', async () => {
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    const { held, slow, reads } = holdFirstRead();
    const arrivals = tally();
    const { call } = await start({ concurrency: 1 }, slow, { arrived: arrivals.note });

    const first = call(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    await held.reached;
    const second = [call(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 }), call(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 })];
    await arrivals.until(3);
    // Both wait in the queue: neither has started (read the original) while the first holds the only slot.
    expect(reads()).toBe(1);
    held.open();
    expect(await first).toMatchObject({ ok: true, body: { object_key: asset.cacheKey(1), made: true } });
    // Before: both 503 TRANSFORMS_BUSY at once (a browser's <img> shows a broken image).
    const answers = await Promise.all(second);
    for (const answer of answers) expect(answer).toMatchObject({ ok: true, status: 200, body: { object_key: asset.cacheKey(2) } });
    // One transform for the two requests of the same variant.
    expect(answers.map((a) => a.ok && a.body.made).sort()).toEqual([false, true]);
    expect(reads()).toBe(2);
  });

  it('refuses what the queue cannot hold: with TRANSFORM_QUEUE 1 the third caller gets 503 TRANSFORMS_BUSY at once, and a wait past TRANSFORM_QUEUE_WAIT_MS gets it too', async () => {
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    const { held, slow, reads } = holdFirstRead();
    const arrivals = tally();
    const { call } = await start({ concurrency: 1, queue: 1, retryAfterSeconds: 3 }, slow, { arrived: arrivals.note });

    const first = call(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    await held.reached;
    const second = call(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 });
    await arrivals.until(2);
    try {
      const overflow = await call(asset.source, asset.cacheKey(3), { format: 'webp', w: 40 });
      expect(overflow).toEqual({ ok: false, status: 503, retryAfter: '3', error: { code: 'TRANSFORMS_BUSY', message: expect.any(String) } });
    } finally {
      held.open();
    }
    expect(await first).toMatchObject({ ok: true, body: { made: true } });
    // Before: 503 as well (no queue).
    expect(await second).toMatchObject({ ok: true, status: 200, body: { object_key: asset.cacheKey(2), made: true } });
    expect(await storage.stat(asset.cacheKey(3))).toBeNull();
    expect(reads()).toBe(2);

    // A waiter is refused once its wait runs out: the first is held until then.
    const again = holdFirstRead();
    const timed = await start({ concurrency: 1, queueWaitMs: 50 }, again.slow);
    const holder = timed.call(asset.source, asset.cacheKey(4), { format: 'webp', w: 21 });
    await again.held.reached;
    try {
      const waited = await timed.call(asset.source, asset.cacheKey(5), { format: 'webp', w: 22 });
      expect(waited).toMatchObject({ ok: false, status: 503, error: { code: 'TRANSFORMS_BUSY' } });
    } finally {
      again.held.open();
    }
    expect(await holder).toMatchObject({ ok: true, body: { made: true } });
    expect(again.reads()).toBe(1);
  });

  it('lets a waiter whose caller went away leave the queue: its place is free for the next caller and it never takes a slot', async () => {
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    const { held, slow, reads } = holdFirstRead();
    const arrivals = tally();
    const { call, url } = await start({ concurrency: 1, queue: 1 }, slow, { arrived: arrivals.note });

    const first = call(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    await held.reached;
    // Metadata's request for the second variant, which it gives up (its timeout, or its own client went).
    const giveUp = new AbortController();
    const body = JSON.stringify({ source_key: asset.source, cache_key: asset.cacheKey(2), params: { format: 'webp', w: 30 } });
    const path = INTERNAL_PATHS.transforms;
    const abandoned = fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...identities.signer('metadata').headers({ audience: 'conversion', method: 'POST', path, body }) },
      body,
      signal: giveUp.signal,
    }).catch(() => 'aborted');
    await arrivals.until(2);
    const waiting = arrivals.seen[1]!.result;
    try {
      giveUp.abort();
      expect(await abandoned).toBe('aborted');
      // The route saw its caller go and the use case let the waiter go. Before: refused at once (TransformsBusyError).
      await expect(waiting).rejects.toThrow('the caller went away');
      // Its place in the queue of one is free: the next caller waits there instead of being refused.
      const third = call(asset.source, asset.cacheKey(3), { format: 'webp', w: 40 });
      await arrivals.until(3);
      held.open();
      expect(await third).toMatchObject({ ok: true, status: 200, body: { object_key: asset.cacheKey(3), made: true } });
    } finally {
      held.open();
    }
    expect(await first).toMatchObject({ ok: true, body: { made: true } });
    // The abandoned transform never ran: two originals read, nothing stored under its key.
    expect(reads()).toBe(2);
    expect(await storage.stat(asset.cacheKey(2))).toBeNull();
  });

  it('keeps a queued variant while one of its callers remains: the one that went is answered at once, the other gets the transform', async () => {
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(48, 32), { contentType: 'image/png' });
    const { held, slow, reads } = holdFirstRead();
    const transform = transformer({
      logger,
      storage: slow,
      variants: storageTransformVariants(storage),
      images: new ImageProcessor(),
      limits: { ...DEFAULTS, concurrency: 1, queue: 1 },
    });
    const first = transform(asset.source, asset.cacheKey(1), { format: 'webp', w: 20 });
    await held.reached;
    const [goes, stays] = [new AbortController(), new AbortController()];
    const leaving = transform(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 }, goes.signal);
    const staying = transform(asset.source, asset.cacheKey(2), { format: 'webp', w: 30 }, stays.signal);
    goes.abort(new Error('gone'));
    await expect(leaving).rejects.toThrow('gone');
    // The variant still holds the one place in the queue: another is refused.
    await expect(transform(asset.source, asset.cacheKey(3), { format: 'webp', w: 40 })).rejects.toBeInstanceOf(TransformsBusyError);
    held.open();
    await expect(first).resolves.toMatchObject({ made: true });
    await expect(staying).resolves.toMatchObject({ object_key: asset.cacheKey(2) });
    expect(await storage.stat(asset.cacheKey(2))).not.toBeNull();
    expect(reads()).toBe(2);
  });

  it('keeps at most MAX_TRANSFORM_VARIANTS transforms per asset: a new one evicts the oldest; deleting the asset removes them all', async () => {
    const { call } = await start({ maxVariants: 3 });
    const asset = newAsset();
    await storage.putBuffer(asset.source, await png(40, 30), { contentType: 'image/png' });
    const output = `${asset.folder}thumb.webp`;
    await storage.putBuffer(output, await png(8, 8), { contentType: 'image/webp' });

    for (let i = 1; i <= 6; i++) {
      const made = await call(asset.source, asset.cacheKey(i), { format: 'webp', w: 10 + i });
      expect(made).toMatchObject({ ok: true, body: { object_key: asset.cacheKey(i), made: true } });
      // What metadata reads next is there.
      expect(await storage.stat(asset.cacheKey(i))).not.toBeNull();
      // Before: 1, 2, ... 6 objects, one more for each new size asked.
      expect((await storage.listKeys(asset.variants)).length).toBe(Math.min(i, 3));
    }
    const kept = await storage.listKeys(asset.variants);
    expect(kept).toContain(asset.cacheKey(6));
    expect(kept).not.toContain(asset.cacheKey(1));
    // The asset's own outputs are not transforms: never evicted.
    expect(await storage.stat(output)).not.toBeNull();
    // An asset's deletion removes its conversions' folder, transforms included (metadata's object deletions).
    await storage.removePrefix(conversionsPrefix('g1', asset.source.split('/')[2] as string));
    expect(await storage.listKeys(asset.folder)).toEqual([]);
  });
});
