/**
 * Byte paths and small requests (issue 8), side by side in one run against a suite started with deploy/local/up
 * (start it with RATE_LIMIT_PER_MINUTE=0 RATE_LIMIT_ADDRESS_PER_MINUTE=0 for the request-rate part: the gateway
 * limits each caller to 1200 a minute by default). Prints one JSON line.
 *   pnpm exec tsx bench/delivery.bench.ts [sizeMiB=256] [clients=50] [seconds=10]
 * - upload through {upload} vs a direct S3 PUT (presigned) of the same file, both by curl;
 * - download of that object: direct S3 GET (presigned), through {base}, a cdn link on a cache miss and on a hit;
 * - time to first byte of a 100 KB object, `clients` at once, on each path;
 * - Get Data through {base} and the gateway's bare /healthz at 32 connections (requests/s, p50, p99);
 * - peak RSS of upload, gateway, metadata and link-signing;
 * - a bare Node proxy (http.request piped to the response, nothing else, in a process of its own) in front of the
 *   same S3 GET, and one piping a request body into a presigned S3 PUT: what any Node hop in a byte path costs on
 *   this machine, each way; and the same file stored as an S3 multipart upload by the suite's own storage code
 *   (`putStream`, parts of UPLOAD_PART_SIZE, 5 MiB by default): how a file part of a form, whose length nobody
 *   knows in advance, has to reach S3.
 * The bench deletes and purges what it stored (the local S3 server keeps objects in memory).
 */
import { execFile, spawn } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createStorage } from '../libs/storage/src';
import { BASE, BENCH_S3, UPLOAD, api, benchMinio, login, percentile, sampleRss, servicePid } from './support';

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

const mibps = (bytes: number, seconds: number) => Math.round((bytes / CHUNK / seconds) * 10) / 10;
const ratio = (reference: number, measured: number) => Math.round((reference / measured) * 100) / 100;

/** One transfer with curl: status, bytes received, total seconds, and the edge's X-Cache. */
async function curl(args: string[], output = '/dev/null'): Promise<{ code: number; size: number; seconds: number; cache: string }> {
  const { stdout } = await promisify(execFile)('curl', ['-s', '-o', output, '-w', '%{http_code} %{size_download} %{time_total} %header{x-cache}', ...args], {
    maxBuffer: 1 << 20,
  });
  const [code, size, seconds, cache] = stdout.trim().split(' ');
  return { code: Number(code), size: Number(size), seconds: Number(seconds), cache: cache ?? '' };
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

async function rate(
  url: string,
  headers: Record<string, string>,
  connections: number,
  forSeconds: number,
): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
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
  return {
    rps: Math.round(times.length / forSeconds),
    p50: Math.round(percentile(times, 50) * 10) / 10,
    p99: Math.round(percentile(times, 99) * 10) / 10,
    errors,
  };
}

/** The smallest Node proxy: one GET of `target` piped to each response. */
const BARE_PROXY = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((req, res) => {
  http.request(process.env.TARGET, { agent }, (body) => {
    res.writeHead(body.statusCode, { 'content-length': body.headers['content-length'] });
    body.pipe(res);
  }).end();
}).listen(0, '127.0.0.1', () => console.log(server.address().port));`;

/** The smallest Node proxy for uploads: each request's body piped into one PUT of `target`. */
const BARE_PUT_PROXY = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((req, res) => {
  const put = http.request(process.env.TARGET, { method: 'PUT', agent, headers: { 'content-length': req.headers['content-length'] } }, (answer) => {
    res.writeHead(answer.statusCode);
    answer.pipe(res);
  });
  req.pipe(put);
}).listen(0, '127.0.0.1', () => console.log(server.address().port));`;

async function bareProxy(target: string, script = BARE_PROXY): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, TARGET: target }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  return { url: `http://127.0.0.1:${line.toString().trim()}/`, stop: () => child.kill() };
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

  // Byte paths, measured with curl (a client that costs little CPU next to the servers on these two cores).
  const dir = await mkdtemp(path.join(tmpdir(), 'dam-delivery-'));
  const file = path.join(dir, 'delivery.bin');
  await pipeline(randomBody(sizeMiB), createWriteStream(file));
  const putKey = `bench/delivery-${Date.now()}.bin`;
  const putUrl = await minio.presignedPutObject(BUCKET, putKey, 600);
  const s3Put = await curl(['-T', file, putUrl]);
  const up = await curl(
    ['-H', `authorization: Bearer ${jwt}`, '-F', `file=@${file};filename=delivery.bin`, `${UPLOAD}/api/v1/assets/new/content/original/upload`],
    path.join(dir, 'up.json'),
  );
  const proxiedKey = `bench/delivery-proxied-${Date.now()}.bin`;
  const putProxy = await bareProxy(await minio.presignedPutObject(BUCKET, proxiedKey, 600), BARE_PUT_PROXY);
  const proxiedPut = await curl(['-T', file, putProxy.url]);
  putProxy.stop();
  if (s3Put.code !== 200 || up.code !== 200 || proxiedPut.code !== 200)
    throw new Error(`S3 PUT ${s3Put.code}, upload ${up.code}, proxied PUT ${proxiedPut.code}`);
  const storage = createStorage({ ...BENCH_S3, bucket: BUCKET, partSize: Number(process.env.UPLOAD_PART_SIZE ?? 5 * CHUNK) });
  const multipartKey = `bench/delivery-multipart-${Date.now()}.bin`;
  const multipartStarted = performance.now();
  await storage.putStream(multipartKey, createReadStream(file, { highWaterMark: CHUNK }), { contentType: 'application/octet-stream' });
  const multipartSeconds = (performance.now() - multipartStarted) / 1000;
  const id = (JSON.parse(await readFile(path.join(dir, 'up.json'), 'utf8')) as { files: Array<{ id: string }> }).files[0]?.id as string;
  await untilOk(jwt, id);

  // Downloads of the same object.
  const direct = (await api(jwt, 'GET', `/api/v1/assets/${id}/get_link?link_type=object_storage&expiry=600`)).body.url as string;
  const cdnUrl = (await api(jwt, 'GET', `/api/v1/assets/${id}/get_link?delivery=download`)).body.url as string;
  const s3a = await curl([direct]);
  const base = await curl(['-H', `authorization: Bearer ${jwt}`, `${BASE}/api/v1/assets/${id}/content/original/download`]);
  const miss = await curl([cdnUrl]);
  const hit = await curl([cdnUrl]);
  const proxy = await bareProxy(direct);
  const bare = await curl([proxy.url]);
  proxy.stop();
  const s3b = await curl([direct]);
  for (const r of [s3a, base, miss, hit, bare, s3b])
    if (r.code !== 200 || r.size !== bytes) throw new Error(`download: ${r.code}, ${r.size} of ${bytes} bytes`);
  const s3Seconds = (s3a.seconds + s3b.seconds) / 2;
  await rm(dir, { recursive: true, force: true });

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

  // The local S3 server keeps objects in memory: leave nothing behind.
  await minio.removeObject(BUCKET, putKey);
  await minio.removeObject(BUCKET, proxiedKey);
  await minio.removeObject(BUCKET, multipartKey);
  for (const asset of [id, smallId]) await api(jwt, 'POST', `/api/v1/assets/${asset}/delete`, { keys: ['original'] });
  await api(jwt, 'DELETE', '/api/v1/assets/trash/purge');

  const memory = Object.fromEntries(Object.entries(rss).map(([s, r]) => [s, r.stop()]));
  console.log(
    JSON.stringify({
      sizeMiB,
      upload: {
        viaUpload: mibps(bytes, up.seconds),
        s3Put: mibps(bytes, s3Put.seconds),
        bareNodeProxy: mibps(bytes, proxiedPut.seconds),
        ratio: ratio(s3Put.seconds, up.seconds),
        bareNodeProxyRatio: ratio(s3Put.seconds, proxiedPut.seconds),
        s3Multipart: mibps(bytes, multipartSeconds),
        s3MultipartRatio: ratio(s3Put.seconds, multipartSeconds),
      },
      download: {
        s3Get: mibps(bytes, s3Seconds),
        viaBase: mibps(bytes, base.seconds),
        cdnMiss: mibps(bytes, miss.seconds),
        cdnHit: mibps(bytes, hit.seconds),
        bareNodeProxy: mibps(bytes, bare.seconds),
        cache: [miss.cache, hit.cache],
        ratios: {
          base: ratio(s3Seconds, base.seconds),
          cdnMiss: ratio(s3Seconds, miss.seconds),
          cdnHit: ratio(s3Seconds, hit.seconds),
          bareNodeProxy: ratio(s3Seconds, bare.seconds),
        },
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
