/**
 * Near-duplicates at scale (CONTRACT §14, issue 9), against the metadata database of a suite started with
 * deploy/local/up:
 *   pnpm exec tsx bench/similar.bench.ts [count=100000] [queries=200]
 * Inserts `count` hashed image assets into a group of their own (a tenth of them near copies of others, a few bits
 * flipped; the rest random), then times metadata's near-duplicate query (the band indexes) at several distances,
 * and the same answers computed by reading the whole group, for comparison; the EXPLAIN ANALYZE of the default
 * distance. Removes what it inserted. Prints one JSON line.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createPool } from '@dam/db';
import { similarQuery } from '../services/metadata/src/adapters/asset.repository';
import { DATA, percentile } from './support';

const count = Number(process.argv[2] ?? 100_000);
const queries = Number(process.argv[3] ?? 200);
const GROUP = 990_001;

const flip = (hash: string, n: number): string => {
  let v = BigInt(`0x${hash}`);
  for (let i = 0; i < n; i++) v ^= 1n << BigInt(Math.floor(Math.random() * 64));
  return v.toString(16).padStart(16, '0');
};

async function main(): Promise<void> {
  const port = readFileSync(path.join(DATA, 'run', 'pg-port'), 'utf8').trim();
  const db = createPool(`postgres://postgres@127.0.0.1:${port}/dam_metadata`, { max: 2 });
  await db.query('DELETE FROM assets WHERE group_id = $1', [GROUP]);
  const hashes: string[] = [];
  for (let i = 0; i < count; i++)
    hashes.push(i % 10 === 9 ? flip(hashes[Math.floor(Math.random() * i)]!, Math.floor(Math.random() * 7)) : randomBytes(8).toString('hex'));
  const ids = hashes.map((_, i) => `simbench${String(i).padStart(24, '0')}`);
  const t0 = performance.now();
  for (let i = 0; i < count; i += 5000) {
    await db.query(
      `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, metadata, object_key)
       SELECT id, $1, 1, 'p.jpg', 1, 'c', 'image/jpeg', 'OK', jsonb_build_object('phash', phash), 'k'
       FROM unnest($2::text[], $3::text[]) AS t(id, phash)`,
      [GROUP, ids.slice(i, i + 5000), hashes.slice(i, i + 5000)],
    );
  }
  const insertMs = performance.now() - t0;
  await db.query('ANALYZE assets');

  const time = async (maxDistance: number, scan: boolean) => {
    const times: number[] = [];
    let found = 0;
    for (let q = 0; q < queries; q++) {
      const i = Math.floor(Math.random() * count);
      const query = similarQuery(GROUP, ids[i]!, hashes[i]!, maxDistance, 50);
      // Reading the group: the same query without the band condition.
      const text = scan ? query.text.replace(/AND \(phash_b0 = ANY[^\n]*\)\)/, '') : query.text;
      const values = scan ? query.values.slice(0, 6) : query.values;
      const t = performance.now();
      found += (await db.query(text, values)).rowCount ?? 0;
      times.push(performance.now() - t);
    }
    const r = (p: number) => Math.round(percentile(times, p) * 100) / 100;
    return { p50: r(50), p95: r(95), p99: r(99), meanFound: Math.round((found / queries) * 10) / 10 };
  };
  const byDistance: Record<string, unknown> = {};
  for (const d of [4, 8, 12, 16, 19, 24]) byDistance[`d${d}`] = await time(d, false);
  const scan8 = await time(8, true);
  const q = similarQuery(GROUP, ids[0]!, hashes[0]!, 8, 50);
  const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, q.values)).rows.map((r: { 'QUERY PLAN': string }) =>
    r['QUERY PLAN'].replace(/ANY \('\{[^}]*\}'::integer\[\]\)/g, 'ANY (<137 values>)'),
  );
  const size = (await db.query("SELECT pg_size_pretty(sum(pg_relation_size(c.oid))) AS bands FROM pg_class c WHERE c.relname LIKE 'assets_phash_b%_idx'"))
    .rows[0];
  await db.query('DELETE FROM assets WHERE group_id = $1', [GROUP]);
  console.log(
    JSON.stringify({ count, insertMs: Math.round(insertMs), queries, bandIndexes: byDistance, readingTheGroupD8: scan8, bandIndexSize: size.bands, plan }),
  );
  await db.end();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
