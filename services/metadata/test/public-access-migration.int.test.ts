/**
 * Public access at any scale (issue 33): an older install's public objects (named one by one in the bucket policy,
 * migration 011) move over once. Migration 020 gives each its folder under the public prefix; the first pass of the
 * public-copies poller copies them, points `urls.public` at the copies and replaces the old policy with the one
 * constant statement, so the old URLs stop working. Its sweep removes folders no public key names.
 */
import path from 'node:path';
import { createPool, migrate, readMigrations, type Pool } from '@dam/db';
import { OUTBOX_MIGRATION_SQL } from '@dam/outbox';
import { conversionKey, createStorage, originalKey, type Storage } from '@dam/storage';
import { createBucket, createDatabase, testS3Config } from '@dam/testing';
import { publicPolicySync } from '../src/adapters/public-object.repository';

const GROUP = 9;
let pool: Pool;
let storage: Storage;
beforeAll(async () => {
  pool = createPool(await createDatabase('metadata-public-migration'));
  storage = createStorage(testS3Config(await createBucket('public-migration')));
});
afterAll(async () => {
  await pool?.end();
});

const status = async (url: string) => (await fetch(url)).status;

it("moves an older install's public objects to copies under the public prefix once, and replaces the listing policy", async () => {
  const files = [...(await readMigrations(path.join(__dirname, '..', 'src', 'migrations'))), { name: '002_outbox.sql', sql: OUTBOX_MIGRATION_SQL }].sort(
    (a, b) => a.name.localeCompare(b.name),
  );
  await migrate(
    pool,
    files.filter((f) => f.name < '020'),
  );
  // The older install: an image with its original and thumbnail public, a video with its HLS folder public.
  const image = 'a'.repeat(32);
  const video = 'b'.repeat(32);
  const original = originalKey(String(GROUP), image);
  const thumb = conversionKey(String(GROUP), image, 'c1', 'thumb', 'webp');
  const hls = `${conversionKey(String(GROUP), video, 'c2', 'hls-video', '')}/`;
  await storage.putBuffer(original, Buffer.from('image bytes'), { contentType: 'image/png' });
  await storage.putBuffer(thumb, Buffer.from('thumb bytes'), { contentType: 'image/webp' });
  await storage.putBuffer(`${hls}master.m3u8`, Buffer.from('#EXTM3U\n360p/index.m3u8\n'), { contentType: 'application/vnd.apple.mpegurl' });
  await storage.putBuffer(`${hls}360p/index.m3u8`, Buffer.from('#EXTM3U\nseg_0.ts\n'), { contentType: 'application/vnd.apple.mpegurl' });
  await storage.putBuffer(`${hls}360p/seg_0.ts`, Buffer.from([0x47, 1, 2]), { contentType: 'video/mp2t' });
  const oldUrls = { original: storage.publicUrl(original), thumb: storage.publicUrl(thumb), hls: storage.publicUrl(`${hls}master.m3u8`) };
  const insert = `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, object_key, conversions, public_urls)
    VALUES ($1, $2, 1, 'n', 1, $3, $4, 'OK', $5, $6, $7)`;
  await pool.query(insert, [
    image,
    GROUP,
    'c1',
    'image/png',
    original,
    { thumb: { width: 1, height: 1, size: 11, public: true, object_key: thumb, content_type: 'image/webp' } },
    { original: oldUrls.original, thumb: oldUrls.thumb },
  ]);
  await pool.query(insert, [
    video,
    GROUP,
    'c2',
    'video/mp4',
    originalKey(String(GROUP), video),
    { 'hls-video': { width: 1, height: 1, size: 3, public: true, object_key: `${hls}master.m3u8`, content_type: 'application/vnd.apple.mpegurl' } },
    { 'hls-video': oldUrls.hls },
  ]);
  await pool.query(
    `INSERT INTO public_objects (object_key, group_id, asset_id, key) VALUES ($1, $4, $5, 'original'), ($2, $4, $5, 'thumb'), ($3, $4, $6, 'hls-video')`,
    [original, thumb, `${hls}*`, GROUP, image, video],
  );
  const resources = [original, thumb, `${hls}*`].map((k) => `arn:aws:s3:::${storage.bucket}/${k}`);
  await storage.client.setBucketPolicy(
    storage.bucket,
    JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: ['*'] }, Action: ['s3:GetObject'], Resource: resources }] }),
  );
  expect(await status(oldUrls.original)).toBe(200);

  // The upgrade: migration 020, then the poller's first pass.
  expect(await migrate(pool, files)).toContain('020_public_copies.sql');
  const sync = publicPolicySync(pool, storage, { sweepEveryMs: 0 });
  expect(await sync()).toBe(3);
  const urls = async (id: string) =>
    (await pool.query<{ public_urls: Record<string, string> }>('SELECT public_urls FROM assets WHERE id = $1', [id])).rows[0]!.public_urls;
  const imageUrls = await urls(image);
  const videoUrls = await urls(video);
  expect(imageUrls.original).toMatch(new RegExp(`/public/${GROUP}/${image}/[0-9a-f]{32}/${image}$`));
  expect(imageUrls.thumb).toMatch(/\/thumb\.webp$/);
  expect(videoUrls['hls-video']).toMatch(new RegExp(`/public/${GROUP}/${video}/[0-9a-f]{32}/hls-video/master\\.m3u8$`));
  expect(await (await fetch(imageUrls.original!)).text()).toBe('image bytes');
  expect(await (await fetch(imageUrls.thumb!)).text()).toBe('thumb bytes');
  const folder = videoUrls['hls-video']!.slice(0, -'master.m3u8'.length);
  expect(await status(`${folder}master.m3u8`)).toBe(200);
  expect(await status(`${folder}360p/seg_0.ts`)).toBe(200);
  // The old policy is gone: the stored objects are private again.
  for (const url of Object.values(oldUrls)) expect({ url, status: await status(url) }).toEqual({ url, status: 403 });
  expect((await pool.query('SELECT count(*)::int AS n FROM public_copies WHERE copied_at IS NULL')).rows[0].n).toBe(0);
  // Once: a second pass has nothing to copy.
  expect(await sync()).toBe(0);

  // The sweep: a folder under the prefix that no public key names is queued for removal; a missing copy is made again.
  await storage.putBuffer(`public/${GROUP}/${image}/0123456789abcdef/stray`, Buffer.from('stray'), { contentType: 'text/plain' });
  await storage.remove(decodeURIComponent(new URL(imageUrls.thumb!).pathname.split('/').slice(2).join('/')));
  expect(await sync()).toBe(0); // the sweep runs after the pending copies: it marks the thumbnail pending
  expect((await pool.query('SELECT key FROM object_deletions')).rows.map((r) => r.key)).toEqual([`public/${GROUP}/${image}/0123456789abcdef/`]);
  expect(await sync()).toBe(1);
  expect(await (await fetch(imageUrls.thumb!)).text()).toBe('thumb bytes');
});

it('leaves no copy behind when the key is revoked while it is being copied', async () => {
  const id = 'c'.repeat(32);
  const original = originalKey(String(GROUP), id);
  await storage.putBuffer(original, Buffer.from('raced'), { contentType: 'text/plain' });
  await pool.query(
    `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, object_key) VALUES ($1, $2, 1, 'n', 5, 'c3', 'text/plain', 'OK', $3)`,
    [id, GROUP, original],
  );
  const prefix = `public/${GROUP}/${id}/00112233445566778899aabbccddeeff/`;
  await pool.query(`INSERT INTO public_copies (prefix, group_id, asset_id, key, source, entry) VALUES ($1, $2, $3, 'original', $4, $3)`, [
    prefix,
    GROUP,
    id,
    original,
  ]);
  // The revocation commits (and its queued removal runs) while the copy is on its way.
  const racing: Storage = {
    ...storage,
    copy: async (from, to, options) => {
      await pool.query(`DELETE FROM public_copies WHERE prefix = $1`, [prefix]);
      await storage.removePrefix(prefix);
      await storage.copy(from, to, options);
    },
  };
  await publicPolicySync(pool, racing, { sweepEveryMs: 60_000 })({ groupId: GROUP, assetId: id });
  expect(await storage.listKeys(prefix)).toEqual([]);
});
