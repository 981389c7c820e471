/**
 * Byte paths and small requests (issue 8), side by side in one run against a suite started with deploy/local/up
 * (start it with RATE_LIMIT_PER_MINUTE=0 RATE_LIMIT_ADDRESS_PER_MINUTE=0 for the request-rate part: the gateway
 * limits each caller to 1200 a minute by default). Prints one JSON line.
 *   pnpm exec tsx bench/delivery.bench.ts [sizeMiB=256] [clients=50] [seconds=10]
 * - upload through {upload} vs a direct S3 PUT (presigned, same client) of the same number of bytes;
 * - download of that object: direct S3 GET (presigned), through {base}, a cdn link on a cache miss and on a hit;
 * - time to first byte of a 100 KB object, `clients` at once, on each path;
 * - Get Data through {base} and the gateway's bare /healthz at 32 connections (requests/s, p50, p99);
 * - peak RSS of upload, gateway, metadata and link-signing.
 */
import { randomFillSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { BASE, UPLOAD, api, benchMinio, login, percentile, sampleRss, servicePid } from './support';

const sizeMiB = Number(process.argv[2] ?? 256);
const clients = Number(process.argv[3] ?? 50);
const seconds = Number(process.argv[4] ?? 10);
const BUCKET = process.env.S3_BUCKET ?? 'dam-assets';
const CHUNK = 1024 * 1024;

function randomBody(mib: number, head?: Buffer, tail?: Buffer): Readable {
  let sent = 0;
  let stage: 'head' | 'body' | 'tail' | 'done' = head ? 'head' : 'body';
  return new Readable({
    read() {
      if (stage === 'head') {
        stage = 'body';
        this.push(head);
      } else if (stage === 'body') {
        this.push(randomFillSync(Buffer.allocUnsafe(CHUNK)));
        if (++sent === mib) stage = tail ? 'tail' : 'done';
      } else if (stage === 'tail') {
        stage = 'done';
        this.push(tail);
      } else this.push(null);
    },
  });
}

const mibps = (bytes: number, ms: number) => Math.round((bytes / CHUNK / (ms / 1000)) * 10) / 10;

/** Reads a whole response, returning the bytes counted and the time taken. */
async function timedGet(url: string, headers: Record<string, string> = {}): Promise<{ ms: number; bytes: number; status: number; cache: string | null }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  return { ms: performance.now() - t0, bytes, status: res.status, cache: res.headers.get('x-cache') };
}

async function ttfb(url: string | (() => string), headers: Record<string, string>, n: number, inFlight: number): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        next += 1;
        const t0 = performance.now();
        const res = await fetch(typeof url === 'string' ? url : url(), { headers });
        times.push(performance.now() - t0);
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`ttfb: ${res.status}`);
      }
    }),
  );
  return { p50: Math.round(percentile(times, 50) * 10) / 10, p99: Math.round(percentile(times, 99) * 10) / 10 };
}

async function rate(url: string, headers: Record<string, string>, connections: number, forSeconds: number): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const times: number[] = [];
  let errors = 0;
  const end = performance.now() + forSeconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const res = await fetch(url, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) errors += 1;
        times.push(performance.now() - t0);
      }
    }),
  );
  return { rps: Math.round(times.length / forSeconds), p50: Math.round(percentile(times, 50) * 10) / 10, p99: Math.round(percentile(times, 99) * 10) / 10, errors };
}

async function untilOk(jwt: string, id: string): Promise<void> {
  for (;;) {
    const d = await api(jwt, 'GET', `/api/v1/assets/${id}/data`);
    if (d.body?.status === 'OK') return;
    if (d.body?.status === 'ERROR') throw new Error(`asset ${id} ended ERROR`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const jwt = await login();
  const auth = { authorization: `Bearer ${jwt}` };
  const minio = benchMinio();
  const bytes = sizeMiB * CHUNK;
  const rss = Object.fromEntries(['upload', 'gateway', 'metadata', 'link-signing'].map((s) => [s, sampleRss(servicePid(s))]));

  // Upload: direct S3 PUT first (the same fetch client, a presigned URL), then through {upload}.
  const putUrl = await minio.presignedPutObject(BUCKET, `bench/delivery-${Date.now()}.bin`, 600);
  let t0 = performance.now();
  const put = await fetch(putUrl, { method: 'PUT', body: randomBody(sizeMiB), headers: { 'content-length': String(bytes) }, duplex: 'half' } as RequestInit);
  const s3PutMs = performance.now() - t0;
  if (put.status !== 200) throw new Error(`S3 PUT answered ${put.status}`);
  const boundary = `bench${Date.now()}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="delivery.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  t0 = performance.now();
  const up = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, {
    method: 'POST',
    headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + bytes + tail.length) },
    body: randomBody(sizeMiB, head, tail),
    duplex: 'half',
  } as RequestInit);
  const uploadMs = performance.now() - t0;
  if (up.status !== 200) throw new Error(`upload answered ${up.status}: ${await up.text()}`);
  const id = ((await up.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
  await untilOk(jwt, id);

  // Downloads of the same object.
  const link = async (key = 'original') => (await api(jwt, 'GET', `/api/v1/assets/${id}/get_link?key=${key}&delivery=download`)).body.url as string;
  const direct = (await api(jwt, 'GET', `/api/v1/assets/${id}/get_link?link_type=object_storage&expiry=600`)).body.url as string;
  const s3a = await timedGet(direct);
  const base = await timedGet(`${BASE}/api/v1/assets/${id}/content/original/download`, auth);
  const cdnUrl = await link();
  const miss = await timedGet(cdnUrl);
  const hit = await timedGet(cdnUrl);
  const s3b = await timedGet(direct);
  for (const r of [s3a, base, miss, hit, s3b]) if (r.bytes !== bytes) throw new Error(`short read: ${r.bytes} of ${bytes}`);
  const s3Ms = (s3a.ms + s3b.ms) / 2;

  // 100 KB: time to first byte with `clients` at once.
  const small = Buffer.alloc(100 * 1024);
  randomFillSync(small);
  const form = new FormData();
  form.append('file', new Blob([small]), 'small.bin');
  const smallUp = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: form });
  const smallId = ((await smallUp.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
  await untilOk(jwt, smallId);
  const smallDirect = (await api(jwt, 'GET', `/api/v1/assets/${smallId}/get_link?link_type=object_storage&expiry=600`)).body.url as string;
  const smallCdn = (await api(jwt, 'GET', `/api/v1/assets/${smallId}/get_link`)).body.url as string;
  const n = clients * 10;
  const ttfbS3 = await ttfb(smallDirect, {}, n, clients);
  const ttfbBase = await ttfb(`${BASE}/api/v1/assets/${smallId}/content/original/download`, auth, n, clients);
  const ttfbCdn = await ttfb(smallCdn, {}, n, clients);

  // Small requests: Get Data against the gateway's own /healthz.
  const healthz = await rate(`${BASE}/healthz`, {}, 32, seconds);
  const getData = await rate(`${BASE}/api/v1/assets/${smallId}/data`, auth, 32, seconds);

  const memory = Object.fromEntries(Object.entries(rss).map(([s, r]) => [s, r.stop()]));
  console.log(
    JSON.stringify({
      sizeMiB,
      upload: { viaUpload: mibps(bytes, uploadMs), s3Put: mibps(bytes, s3PutMs), ratio: Math.round((s3PutMs / uploadMs) * 100) / 100 },
      download: {
        s3Get: mibps(bytes, s3Ms),
        viaBase: mibps(bytes, base.ms),
        cdnMiss: mibps(bytes, miss.ms),
        cdnHit: mibps(bytes, hit.ms),
        cache: [miss.cache, hit.cache],
        ratios: { base: Math.round((s3Ms / base.ms) * 100) / 100, cdnMiss: Math.round((s3Ms / miss.ms) * 100) / 100, cdnHit: Math.round((s3Ms / hit.ms) * 100) / 100 },
      },
      ttfb100KB: { clients, requests: n, s3: ttfbS3, base: ttfbBase, cdn: ttfbCdn },
      smallRequests: { connections: 32, seconds, healthz, getData },
      peakRssMiB: memory,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
