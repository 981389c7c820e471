/**
 * Public access at any scale (issue 33): 10,000 public objects in one group, then 100 groups publishing at once,
 * against metadata over real PostgreSQL and S3 (radosgw). Before, every public object was one entry of one bucket
 * policy, which AWS S3 and MinIO cap at 20 KiB (about 300 objects). Not in the CI run (minutes):
 *
 *   pnpm test:soak test/soak/public-access-scale.soak.test.ts
 *
 * PUBLIC_SCALE_OBJECTS (10000), PUBLIC_SCALE_GROUPS (100) and PUBLIC_SCALE_PER_GROUP (10) change the sizes. It prints
 * one JSON line of figures (`public-access-scale`).
 */
import { createHash } from 'node:crypto';
import { originalKey } from '../../libs/storage/src';
import { waitFor } from '../../libs/testing/src';
import { publicPolicySync } from '../../services/metadata/src/adapters/public-object.repository';
import { assetId, principal, signedFetch, startMetadata, type Harness } from '../../services/metadata/test/harness';

const OBJECTS = Number(process.env.PUBLIC_SCALE_OBJECTS ?? 10_000);
const GROUPS = Number(process.env.PUBLIC_SCALE_GROUPS ?? 100);
const PER_GROUP = Number(process.env.PUBLIC_SCALE_PER_GROUP ?? 10);
/** Set Public Access requests in flight for the one large group. */
const CONCURRENCY = 16;
const BIG_GROUP = 500;

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

const post = (group: number, path: string, body: unknown) =>
  signedFetch(`${h.url}${path}`, principal({ group_id: group, user_id: 1 }), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** Stores `count` small originals of one group and registers them (1,000 per request); returns their ids. */
async function createAssets(group: number, count: number): Promise<string[]> {
  const files = await pool(
    Array.from({ length: count }, () => assetId()),
    32,
    async (id) => {
      const bytes = Buffer.from(`public ${group} ${id}`);
      await h.storage.putBuffer(originalKey(String(group), id), bytes, { contentType: 'text/plain' });
      return {
        id,
        name: 'p.txt',
        size: bytes.length,
        checksum: createHash('md5').update(bytes).digest('hex'),
        content_type: 'text/plain',
        object_key: originalKey(String(group), id),
        metadata: {},
      };
    },
  );
  for (let i = 0; i < files.length; i += 1000) {
    const res = await post(group, '/internal/v1/assets', { files: files.slice(i, i + 1000) });
    if (res.status !== 201) throw new Error(`registering assets of group ${group}: ${res.status} ${await res.text()}`);
  }
  return files.map((f) => f.id);
}

/** Set Public Access of the original; the status and how long it took. */
async function publish(group: number, id: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await post(group, `/api/v1/assets/${id}/content/set_public_access`, { keys: ['original'] });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0);
};
const publicUrlOf = async (group: number, id: string): Promise<string> => {
  const res = await signedFetch(`${h.url}/api/v1/assets/${id}/data`, principal({ group_id: group, user_id: 1 }));
  return ((await res.json()) as { urls: { public: Record<string, string> } }).urls.public.original!;
};
const sample = <T>(items: readonly T[], n: number): T[] => Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);

it(`publishes ${OBJECTS} objects in one group, then ${GROUPS} groups at once, with no failure; revocation still works`, async () => {
  const figures: Record<string, unknown> = { objects: OBJECTS, groups: GROUPS, perGroup: PER_GROUP };

  // One group, OBJECTS public objects.
  let t = performance.now();
  const big = await createAssets(BIG_GROUP, OBJECTS);
  figures.createSeconds = Math.round(performance.now() - t) / 1000;
  t = performance.now();
  const one = await pool(big, CONCURRENCY, (id) => publish(BIG_GROUP, id));
  const oneSeconds = (performance.now() - t) / 1000;
  figures.oneGroup = {
    seconds: Math.round(oneSeconds * 10) / 10,
    perSecond: Math.round(OBJECTS / oneSeconds),
    failures: one.filter((r) => r.status !== 200).length,
    p50Ms: percentile(
      one.map((r) => r.ms),
      50,
    ),
    p99Ms: percentile(
      one.map((r) => r.ms),
      99,
    ),
  };
  const policyBytes = Buffer.byteLength(await h.storage.client.getBucketPolicy(h.storage.bucket));
  figures.policyBytes = policyBytes;

  // GROUPS groups, each publishing PER_GROUP objects, all groups at once.
  t = performance.now();
  const groups = Array.from({ length: GROUPS }, (_, i) => 1000 + i);
  const perGroup = await pool(groups, 8, async (g) => ({ group: g, ids: await createAssets(g, PER_GROUP) }));
  figures.createManySeconds = Math.round(performance.now() - t) / 1000;
  t = performance.now();
  const many = (await Promise.all(perGroup.map(async ({ group, ids }) => pool(ids, 1, (id) => publish(group, id))))).flat();
  const manySeconds = (performance.now() - t) / 1000;
  figures.manyGroups = {
    seconds: Math.round(manySeconds * 10) / 10,
    perSecond: Math.round(many.length / manySeconds),
    failures: many.filter((r) => r.status !== 200).length,
    p50Ms: percentile(
      many.map((r) => r.ms),
      50,
    ),
    p99Ms: percentile(
      many.map((r) => r.ms),
      99,
    ),
  };

  // Anonymous reads of a sample; then a revocation among them all.
  const urls = await pool(sample(big, 50), 8, (id) => publicUrlOf(BIG_GROUP, id));
  const manyUrls = await pool(sample(perGroup, 50), 8, ({ group, ids }) => publicUrlOf(group, ids[0]!));
  const statuses = await pool([...urls, ...manyUrls], 8, async (url) => (await fetch(url)).status);
  figures.sampleReadable = statuses.filter((s) => s === 200).length;
  t = performance.now();
  const revokedId = big[Math.floor(OBJECTS / 2)]!;
  const revokedUrl = await publicUrlOf(BIG_GROUP, revokedId);
  expect((await post(BIG_GROUP, `/api/v1/assets/${revokedId}/delete`, { keys: ['original'] })).status).toBe(200);
  await waitFor(async () => (await fetch(revokedUrl)).status === 403, { timeoutMs: 60_000, description: 'revoked' });
  figures.revokeSeconds = Math.round(performance.now() - t) / 1000;

  const { rows } = await h.pool.query<{ copied: number; pending: number }>(
    'SELECT count(*) FILTER (WHERE copied_at IS NOT NULL)::int AS copied, count(*) FILTER (WHERE copied_at IS NULL)::int AS pending FROM public_copies',
  );
  figures.copies = rows[0];
  // The sweep of the whole prefix (the periodic database-against-store check).
  t = performance.now();
  await publicPolicySync(h.pool, h.storage, { sweepEveryMs: 0 })();
  figures.sweepSeconds = Math.round(performance.now() - t) / 1000;
  figures.sweepQueuedRemovals = (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM object_deletions WHERE key LIKE 'public/%'`)).rows[0]!.n;

  console.log(`public-access-scale ${JSON.stringify(figures)}`);
  expect(figures).toMatchObject({
    oneGroup: { failures: 0 },
    manyGroups: { failures: 0 },
    sampleReadable: 100,
    copies: { copied: OBJECTS + GROUPS * PER_GROUP - 1, pending: 0 },
  });
  expect(policyBytes).toBeLessThan(1024);
});
