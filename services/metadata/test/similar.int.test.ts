/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomBytes } from 'node:crypto';
import { originalKey } from '@dam/storage';
import { waitFor } from '@dam/testing';
import { similarQuery } from '../src/adapters/asset.repository';
import { assetId, finalReport, principal, publishReport, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 25;
const admin = principal({ group_id: GROUP, user_id: 1 });

/** An image asset whose processing reported `phash`. */
async function image(phash: string | undefined, p = admin): Promise<string> {
  const id = assetId();
  const checksum = createHash('md5').update(id).digest('hex');
  const res = await signedFetch(`${h.url}/internal/v1/assets`, p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [{ id, name: 'p.png', size: 1, checksum, content_type: 'image/png', object_key: originalKey(String(GROUP), id), metadata: {} }],
    }),
  });
  expect(res.status).toBe(201);
  const made = { id: 'r', asset_id: id, group_id: String(GROUP), source_checksum: checksum, image: { width: 1, height: 1 }, conversions: {}, errors: {} };
  publishReport(h, await finalReport(h, phash ? { ...made, metadata: { phash } } : made));
  await waitFor(async () => (await get(`/api/v1/assets/${id}/data`)).body.status === 'OK', { description: 'OK' });
  return id;
}

const get = async (path: string, p = admin) => {
  const res = await signedFetch(`${h.url}${path}`, p);
  return { status: res.status, body: (await res.json()) as any };
};

describe('GET /api/v1/assets/{id}/similar (CONTRACT §14)', () => {
  it('lists assets within max_distance bits, nearest first, never itself', async () => {
    const base = await image('00000000000000ff');
    const one = await image('00000000000000fe'); // 1 bit
    const four = await image('000000000000000f'); // 4 bits
    const far = await image('ffffffffffffff00'); // 64 bits
    await image(undefined);
    expect((await get(`/api/v1/assets/${base}/similar`)).body).toEqual({
      items: [
        { id: one, distance: 1 },
        { id: four, distance: 4 },
      ],
    });
    expect((await get(`/api/v1/assets/${base}/similar?max_distance=1`)).body.items).toEqual([{ id: one, distance: 1 }]);
    expect((await get(`/api/v1/assets/${base}/similar?max_distance=32`)).body.items.map((i: any) => i.id)).not.toContain(far);
    for (const bad of ['-1', '33', 'x']) expect((await get(`/api/v1/assets/${base}/similar?max_distance=${bad}`)).status).toBe(400);
    expect((await get(`/api/v1/assets/${base}/similar`, principal({ group_id: GROUP + 1 }))).status).toBe(404);
  });

  it('answers as a scan of every hash would, at every distance, from the band indexes', async () => {
    // 3,000 hashed assets straight into the table (the band columns are generated from metadata.phash):
    // clusters around a few centres, so every distance has answers, plus random ones.
    const group = GROUP + 10;
    const centres = Array.from({ length: 6 }, () => randomBytes(8).toString('hex'));
    const flip = (hash: string, n: number): string => {
      let v = BigInt(`0x${hash}`);
      for (let i = 0; i < n; i++) v ^= 1n << BigInt(Math.floor(Math.random() * 64));
      return v.toString(16).padStart(16, '0');
    };
    const hashes = new Map<string, string>();
    for (let i = 0; i < 3000; i++) {
      const centre = centres[i % centres.length]!;
      hashes.set(assetId(), i % 3 === 0 ? randomBytes(8).toString('hex') : flip(centre, Math.floor(Math.random() * 24)));
    }
    const ids = [...hashes.keys()];
    await h.pool.query(
      `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, metadata, object_key)
       SELECT id, $1, 1, 'p.png', 1, 'c', 'image/png', 'OK', jsonb_build_object('phash', phash), 'k'
       FROM unnest($2::text[], $3::text[]) AS t(id, phash)`,
      [group, ids, [...hashes.values()]],
    );
    await h.pool.query('ANALYZE assets');
    const distance = (a: string, b: string): number => (BigInt(`0x${a}`) ^ BigInt(`0x${b}`)).toString(2).replace(/0/g, '').length;
    const scan = (id: string, max: number) =>
      ids
        .filter((other) => other !== id)
        .map((other) => ({ id: other, distance: distance(hashes.get(id)!, hashes.get(other)!) }))
        .filter((x) => x.distance <= max)
        .sort((x, y) => x.distance - y.distance || (x.id < y.id ? -1 : 1))
        .slice(0, 50);
    const caller = principal({ group_id: group, user_id: 1 });
    for (const [i, max] of [0, 3, 8, 12, 19, 20, 32].entries()) {
      const id = ids[i * 3 + 1]!; // a clustered one
      expect((await get(`/api/v1/assets/${id}/similar?max_distance=${max}`, caller)).body.items).toEqual(scan(id, max));
    }
    // In a large group the default distance is answered from the band indexes, not by reading the group
    // (100,000 more assets with random hashes; below a few tens of thousands reading the group is cheaper, and
    // the planner rightly does that).
    await h.pool.query(
      `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, metadata, object_key)
       SELECT md5(random()::text), $1, 1, 'p.png', 1, 'c', 'image/png', 'OK', jsonb_build_object('phash', lpad(to_hex((random() * 4294967295)::bigint), 8, '0') || lpad(to_hex((random() * 4294967295)::bigint), 8, '0')), 'k'
       FROM generate_series(1, 100000)`,
      [group],
    );
    await h.pool.query('ANALYZE assets');
    const q = similarQuery(group, assetId(), randomBytes(8).toString('hex'), 8, 50);
    const plan = (await h.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${q.text}`, q.values)).rows.map((r) => r['QUERY PLAN']).join('\n');
    for (const band of [0, 1, 2, 3]) expect(plan).toContain(`assets_phash_b${band}_idx`);
    expect(plan).not.toMatch(/Seq Scan on assets/);
  });
});
