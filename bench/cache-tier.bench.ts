/**
 * The `{cdn}` cache tier (deploy/cache, issue 33) against the object store: requests/s and p50/p99 of a cached hit
 * through the tier (nginx) and of a direct S3 GET (a presigned `object_storage` link of the same object), in the
 * same run, for a small and a large object.
 *
 *   deploy/local/up   (the tier on 127.0.0.1:8082 is {cdn}, link-signing's edge behind it on 8083; RATE_LIMIT_* / CDN_RATE_LIMIT_* need not change: hits
 *                      never reach the edge)
 *   pnpm exec tsx bench/cache-tier.bench.ts [seconds=10] [smallKB=50] [largeMiB=10]
 *
 * env: SMALL_CONNECTIONS (32), LARGE_CONNECTIONS (8). Deletes and purges what it stored.
 */
import { randomBytes } from 'node:crypto';
import { api, login, percentile, uploadFiles } from './support';

const seconds = Number(process.argv[2] ?? 10);
const smallKB = Number(process.argv[3] ?? 50);
const largeMiB = Number(process.argv[4] ?? 10);
const SMALL_CONNECTIONS = Number(process.env.SMALL_CONNECTIONS ?? 32);
const LARGE_CONNECTIONS = Number(process.env.LARGE_CONNECTIONS ?? 8);

interface Rate {
  rps: number;
  mibps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Answers of the tier that were not cache hits (X-Cache-Status). */
  notHits?: number;
}

async function rate(url: string, connections: number, forSeconds: number, size: number, tier: boolean): Promise<Rate> {
  const times: number[] = [];
  let errors = 0;
  let notHits = 0;
  const end = performance.now() + forSeconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const res = await fetch(url);
        const body = await res.arrayBuffer();
        times.push(performance.now() - t0);
        if (res.status !== 200 || body.byteLength !== size) errors += 1;
        if (tier && res.headers.get('x-cache-status') !== 'HIT') notHits += 1;
      }
    }),
  );
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    rps: Math.round(times.length / forSeconds),
    mibps: round((times.length * size) / forSeconds / 1024 ** 2),
    p50: round(percentile(times, 50)),
    p99: round(percentile(times, 99)),
    errors,
    ...(tier ? { notHits } : {}),
  };
}

async function linkOf(jwt: string, id: string, query: string): Promise<string> {
  const res = await api(jwt, 'GET', `/api/v1/assets/${id}/get_link${query}`);
  if (res.status !== 200) throw new Error(`get_link ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.url as string;
}

async function main(): Promise<void> {
  const jwt = await login();
  const objects = [
    { label: `${smallKB}KB`, bytes: randomBytes(smallKB * 1024), connections: SMALL_CONNECTIONS },
    { label: `${largeMiB}MiB`, bytes: randomBytes(largeMiB * 1024 ** 2), connections: LARGE_CONNECTIONS },
  ];
  const ids = await uploadFiles(
    jwt,
    objects.map((o, i) => ({ bytes: o.bytes, name: `tier-${i}.bin` })),
  );
  // Files of no image or video type have no processing job to wait for (support's untilOk): their status is enough.
  for (const id of ids) {
    for (let tries = 0; ; tries++) {
      const { body } = await api(jwt, 'GET', `/api/v1/assets/${id}/data`);
      if (body?.status && body.status !== 'NOT_READY') break;
      if (tries > 600) throw new Error(`${id} still NOT_READY`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const results: Record<string, unknown> = {};
  for (const [i, o] of objects.entries()) {
    const id = ids[i] as string;
    const cdn = await linkOf(jwt, id, '?delivery=display');
    const s3 = await linkOf(jwt, id, '?link_type=object_storage');
    // Into the tier, and checked to be a hit before measuring.
    for (let k = 0; k < 2; k++) await (await fetch(cdn)).arrayBuffer();
    const probe = await fetch(cdn);
    await probe.arrayBuffer();
    if (probe.headers.get('x-cache-status') !== 'HIT')
      throw new Error(`${cdn} is not served by the cache tier as a hit (X-Cache-Status ${probe.headers.get('x-cache-status')})`);
    const maxAge = Number(/max-age=(\d+)/.exec(probe.headers.get('cache-control') ?? '')?.[1] ?? 0);
    // A run longer than max-age revalidates with the edge (one 304 per entry): the figures stay hits' figures.
    const s3First = await rate(s3, o.connections, seconds, o.bytes.length, false);
    const tier = await rate(cdn, o.connections, seconds, o.bytes.length, true);
    const s3Second = await rate(s3, o.connections, seconds, o.bytes.length, false);
    const s3Avg = { rps: Math.round((s3First.rps + s3Second.rps) / 2), p50: (s3First.p50 + s3Second.p50) / 2, p99: (s3First.p99 + s3Second.p99) / 2 };
    results[o.label] = {
      connections: o.connections,
      maxAge,
      tierHit: tier,
      s3Get: { first: s3First, second: s3Second },
      tierToS3: {
        rps: Math.round((tier.rps / s3Avg.rps) * 100) / 100,
        p50: Math.round((s3Avg.p50 / tier.p50) * 100) / 100,
        p99: Math.round((s3Avg.p99 / tier.p99) * 100) / 100,
      },
    };
  }
  for (const id of ids) await api(jwt, 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] });
  await api(jwt, 'DELETE', '/api/v1/assets/trash/purge');
  console.log(JSON.stringify({ seconds, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
