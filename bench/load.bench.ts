/**
 * Load (issue 14), against a suite started with `RATE_LIMIT_PER_MINUTE=0 RATE_LIMIT_ADDRESS_PER_MINUTE=0
 * deploy/local/up` (the edges limit each caller to 600-1200 requests a minute by default). Prints one JSON line.
 * A 900 s run stores 14-19 GB: start it on a store made anew with `S3_DISK_BYTES=34359738368` (docs/operations.md).
 *   pnpm exec tsx bench/load.bench.ts [uploaders=50] [readers=20] [seconds=120]
 * env: LOAD_SEED (14), READ_PAUSE_MS (0: readers send their next request at once), DRAIN_TIMEOUT_S (300), IDLE_WAIT_S
 *   (60: quiet time after the clean-up before the idle RSS is read), TRANSFORM_SHARE (0.2), BULK_CLIENTS (2),
 *   BULK_BATCH (20), DAM_CDN_URL (http://127.0.0.1:8082, only for the tier's pid file: links carry their own address),
 *   LOAD_SERIES_FILE (unset: where to write each service's memory over time as JSON)
 *
 * - `uploaders` clients, each with an API key of its own (the upload service lets one principal run 8 uploads at
 *   once: 50 uploaders are 50 principals), upload one file per request to {upload} in a loop for `seconds`. Sizes
 *   10 KB-20 MB, seeded, log-uniform in u³ (about two thirds under 100 KB, 85 % under 1 MB, 6-7 % over 5 MB); up to
 *   3 MB six in ten are real images (PNG and JPEG made with sharp once, the nearest in size) so processing runs,
 *   the rest random bytes named .bin.
 * - `readers` clients (the admin's JWT) loop: one request in five (TRANSFORM_SHARE, 0.2) a transform link (CONTRACT
 *   §15), the rest the mix of issue 14 as it was, three in four Get Data through {base} of an asset uploaded so far and
 *   one in four a search (keyword, keyword + filter + facets, filter + sort, newest first): Get Data 60 %, search
 *   20 %, transforms 20 %. A transform: an uploaded image (half the time one of the first 16, so links are shared),
 *   one of five variants (w=400 format=auto with a browser's Accept: Chrome's, a WebP-only one's or any type; w=200 h=200
 *   cover webp q=70; w=800 jpeg q=80; w=100 h=100 contain png; w=640 h=480 inside avif q=50); Get Link through {base}
 *   with those parameters the first time that image and variant are drawn (the link is kept and reused after, as a
 *   page embeds it), then GET of the `cdn` URL through {cdn}, the nginx cache tier (deploy/cache): latency by the
 *   tier's X-Cache-Status (HIT, MISS, EXPIRED past max-age, ...) and, on a tier miss, by the edge's X-Cache. A 503
 *   TRANSFORMS_BUSY (conversion's TRANSFORM_CONCURRENCY slots all taken) is asked again after its Retry-After, up to
 *   3 times, and counted apart (`busy503RetriedAfter`); only a last answer that is not 200 is an error.
 * - BULK_CLIENTS (2) console users (the admin's JWT) each repeat the console's bulk actions on a batch of BULK_BATCH
 *   (20) small images they upload in one request (web/console/src/components/selection-bar.tsx, bulk-forms.tsx, four
 *   requests at a time as its runEach): select them (POST SELECTED_ASSETS' assets), add them to a new collection
 *   (POST /collections, POST its assets), get their `cdn` links (POST get_link), once processed (metadata's database,
 *   no API polling) process them again with `smart_imaging` (one POST /process each) and wait for those jobs (GET
 *   /jobs/{id} every second), move them to the trash (POST /delete each), unselect them and delete the collection.
 *   Each action's latency is reported per endpoint; those assets are not read by the readers.
 * - Every non-2xx answer and network error counts as an error (samples printed); latency p50/p99, count and
 *   requests/s per endpoint, upload MB/s and latency by size class.
 * - Every service's RSS (VmRSS) and open file descriptors (/proc/<pid>/fd) each second: before, after warm-up
 *   (median of 15-25 % of the run), at the end (median of the last 10 %), the maximum, and after the drain;
 *   `held` when end ≤ warm-up × 1.2; the RSS trend after warm-up and over the last half (MiB/min), and the
 *   JavaScript heap in use and committed and V8's external memory at warm-up and end (/metrics, every 5 s, with the
 *   longest event-loop delay); RSS once the suite has been quiet
 *   IDLE_WAIT_S after the clean-up: a service that grew under load but is back within 1.2 × its RSS before the
 *   load `returnedWhenIdle` (working set given back, not a leak), otherwise it `grew`. CPU seconds per service, the
 *   infrastructure and the rest of the machine during the load; the load average.
 * - After the load: time until no uploaded asset is NOT_READY (metadata's database), until metadata's outbox is
 *   empty (its /metrics gauge) and until every durable consumer's num_pending + num_ack_pending is 0 (as the
 *   operators' NATS identity); target: backlogs drained within 10 s.
 * Then deletes the uploaded assets, purges the trash and revokes the keys.
 */
import { randomBytes, randomFillSync } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import sharp from 'sharp';
import { createPool } from '@dam/db';
import { connectNats } from '@dam/events';
import { api, BASE, cpuSeconds, DATA, envOf, infraPids, login, machineCpu, percentile, photo, SERVICES, treeCpuSeconds, UPLOAD } from './support';

const uploaders = Number(process.argv[2] ?? 50);
const readers = Number(process.argv[3] ?? 20);
const seconds = Number(process.argv[4] ?? 120);
const SEED = Number(process.env.LOAD_SEED ?? 14);
const READ_PAUSE_MS = Number(process.env.READ_PAUSE_MS ?? 0);
const DRAIN_TIMEOUT_S = Number(process.env.DRAIN_TIMEOUT_S ?? 300);
const SERIES_FILE = process.env.LOAD_SERIES_FILE ?? '';
const IDLE_WAIT_S = Number(process.env.IDLE_WAIT_S ?? 60);
const PORTS: Record<string, number> = {
  gateway: 8080,
  upload: 8081,
  // behind the {cdn} cache tier (8082) since issue 33; DAM_CDN_TIER=0 puts it back on 8082
  'link-signing': Number(process.env.LINK_SIGNING_PORT ?? 8083),
  auth: 8090,
  metadata: 8091,
  search: 8092,
  conversion: 8093,
  transcode: 8094,
  addon: 8095,
  webhook: 8096,
};
const TRANSFORM_SHARE = Number(process.env.TRANSFORM_SHARE ?? 0.2);
const BULK_CLIENTS = Number(process.env.BULK_CLIENTS ?? 2);
const BULK_BATCH = Number(process.env.BULK_BATCH ?? 20);
const METADATA_METRICS = `${process.env.METADATA_URL ?? 'http://127.0.0.1:8091'}/metrics`;
const KB = 1000;
const MAX_BYTES = 20_000_000;
const WORDS = ['harbour', 'sunset', 'mountain', 'city', 'portrait', 'product', 'launch', 'forest', 'river', 'studio'];

/** mulberry32: a small seeded generator, so every run draws the same sizes and kinds. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (values: readonly number[]) => percentile(values, 50);

// --- files -------------------------------------------------------------------------------------------------------

interface Image {
  bytes: Buffer;
  ext: string;
}

/** Real images from 11 KB to 2 MB (JPEG photos and PNG noise), made once and reused. */
async function imagePool(): Promise<Image[]> {
  const pool: Image[] = [];
  for (const [i, mp] of [0.02, 0.05, 0.1, 0.3, 1, 3, 8].entries()) pool.push({ bytes: await photo(i + 1, mp), ext: 'jpg' });
  for (const side of [60, 100, 180, 300, 500]) {
    pool.push({
      bytes: await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
        .png()
        .toBuffer(),
      ext: 'png',
    });
  }
  return pool.sort((a, b) => a.bytes.length - b.bytes.length);
}

const NOISE = randomFillSync(Buffer.allocUnsafe(MAX_BYTES));

/** The next file of one uploader: a size 10 KB-20 MB (log-uniform in u³), a real image for six in ten up to 3 MB. */
function nextFile(random: () => number, images: readonly Image[], n: number): { body: Blob; name: string; size: number; kind: 'image' | 'bin' } {
  const wanted = Math.round(10 * KB * (MAX_BYTES / (10 * KB)) ** (random() ** 3));
  const word = WORDS[Math.floor(random() * WORDS.length)] as string;
  if (wanted <= 3_000_000 && random() < 0.6) {
    const image = images.reduce((best, i) => (Math.abs(Math.log(i.bytes.length / wanted)) < Math.abs(Math.log(best.bytes.length / wanted)) ? i : best));
    return { body: new Blob([image.bytes]), name: `load-${word}-${n}.${image.ext}`, size: image.bytes.length, kind: 'image' };
  }
  // Random bytes: a unique head, then a window of the noise buffer.
  const offset = Math.floor(random() * (MAX_BYTES - wanted));
  return { body: new Blob([randomBytes(16), NOISE.subarray(offset, offset + wanted - 16)]), name: `load-${word}-${n}.bin`, size: wanted, kind: 'bin' };
}

// --- process sampling ----------------------------------------------------------------------------------------------

interface ProcSample {
  t: number;
  rssKb: number;
  fds: number;
}

function pidOf(service: string): number | undefined {
  try {
    return Number(readFileSync(path.join(DATA, 'run', `${service}.pid`), 'utf8'));
  } catch {
    return undefined;
  }
}

function procSample(pid: number, t: number): ProcSample {
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return { t, rssKb, fds: readdirSync(`/proc/${pid}/fd`).length };
}

const loadAverage = (): number[] => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

// --- backlogs ------------------------------------------------------------------------------------------------------

/**
 * From a service's /metrics (prom-client's defaults): the longest event-loop delay since the previous scrape
 * (nodejs_eventloop_lag_max_seconds), the JavaScript heap in use and committed (nodejs_heap_size_used_bytes,
 * nodejs_heap_size_total_bytes) and the memory V8 tracks outside its heap (nodejs_external_memory_bytes: Buffers and
 * other native objects held from JavaScript). RSS minus the committed heap minus external is what the process holds
 * elsewhere: code, stacks, and what the native allocator keeps.
 */
interface Runtime {
  lagMaxS: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
}
async function runtimeMetrics(service: string): Promise<Runtime> {
  const text = await (await fetch(`http://127.0.0.1:${PORTS[service] ?? 0}/metrics`)).text();
  const value = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
  };
  return {
    lagMaxS: value('nodejs_eventloop_lag_max_seconds'),
    heapUsedBytes: value('nodejs_heap_size_used_bytes'),
    heapTotalBytes: value('nodejs_heap_size_total_bytes'),
    externalBytes: value('nodejs_external_memory_bytes'),
  };
}

/** Least-squares slope of y over t (per second). */
function slope(points: ReadonlyArray<{ t: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.t - mt) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.t - mt) ** 2, 0);
  return den === 0 ? NaN : num / den;
}

async function outboxRows(): Promise<number> {
  const text = await (await fetch(METADATA_METRICS)).text();
  const line = text.split('\n').find((l) => l.startsWith('outbox_unpublished_rows'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

/** num_pending + num_ack_pending of every durable consumer of every stream; ephemeral consumers counted apart. */
async function consumerBacklog(jsm: JetStreamManager): Promise<{ total: number; byConsumer: Record<string, number>; ephemeral: number }> {
  const byConsumer: Record<string, number> = {};
  let ephemeral = 0;
  for await (const stream of jsm.streams.list()) {
    for await (const c of jsm.consumers.list(stream.config.name)) {
      if (!c.config.durable_name) {
        ephemeral += 1;
        continue;
      }
      byConsumer[`${stream.config.name}/${c.name}`] = c.num_pending + c.num_ack_pending;
    }
  }
  return { total: Object.values(byConsumer).reduce((a, b) => a + b, 0), byConsumer, ephemeral };
}

// --- load ------------------------------------------------------------------------------------------------------------

type Endpoint =
  | 'upload'
  | 'getData'
  | 'search'
  | 'transformLink'
  | 'transformGet'
  | 'bulkUpload'
  | 'bulkSelect'
  | 'bulkCollection'
  | 'bulkLinks'
  | 'bulkProcess'
  | 'bulkJobs'
  | 'bulkDelete'
  | 'bulkUnselect';
const ENDPOINTS: readonly Endpoint[] = [
  'upload',
  'getData',
  'search',
  'transformLink',
  'transformGet',
  'bulkUpload',
  'bulkSelect',
  'bulkCollection',
  'bulkLinks',
  'bulkProcess',
  'bulkJobs',
  'bulkDelete',
  'bulkUnselect',
];

/** Transform links (CONTRACT §15): the variants readers ask for; `auto` answers from the request's Accept. */
const VARIANTS = [
  'w=400&format=auto',
  'w=200&h=200&fit=cover&format=webp&q=70',
  'w=800&format=jpeg&q=80',
  'w=100&h=100&fit=contain&format=png',
  'w=640&h=480&fit=inside&format=avif&q=50',
];
const ACCEPTS = ['image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8', 'image/webp,*/*', '*/*'];
/** Half the transforms go to the first images uploaded, so links are shared and the tier has something to hit. */
const POPULAR_IMAGES = 16;

interface Failure {
  endpoint: Endpoint;
  status: number;
  body: string;
}

const SIZE_CLASSES = [
  { name: '<=100KB', max: 100 * KB },
  { name: '<=1MB', max: 1_000_000 },
  { name: '<=5MB', max: 5_000_000 },
  { name: '<=20MB', max: Infinity },
];

function latency(times: readonly number[], forSeconds: number) {
  return { count: times.length, rps: round(times.length / forSeconds), p50: round(percentile(times, 50)), p99: round(percentile(times, 99)) };
}

function searchBody(random: () => number): unknown {
  const word = WORDS[Math.floor(random() * WORDS.length)] as string;
  switch (Math.floor(random() * 4)) {
    case 0:
      return { query: word };
    case 1:
      return { query: word, filters: { content_type: ['image/*'] }, facets: ['content_type', 'status'], page_size: 25 };
    case 2:
      return { filters: { name: 'load-*' }, sort: [{ field: 'size', order: 'desc' }], page_size: 25 };
    default:
      return { page_size: 25 };
  }
}

/** `task` on each item, `concurrency` at a time (the console's runEach: four). */
async function eachOf<T>(items: readonly T[], task: (item: T) => Promise<void>, concurrency = 4): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

async function main(): Promise<void> {
  const jwt = await login();
  const auth = { authorization: `Bearer ${jwt}` };
  const seeds = envOf(path.join(DATA, 'secrets', 'nats-users.env'));
  const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'admin', seeds.NATS_NKEY_SEED_ADMIN);
  const jsm = await jetstreamManager(nc);
  const db = createPool(`postgres://postgres@127.0.0.1:${readFileSync(path.join(DATA, 'run', 'pg-port'), 'utf8').trim()}/dam_metadata`, { max: 2 });
  const pids = Object.fromEntries(SERVICES.flatMap((s) => (pidOf(s) ? [[s, pidOf(s) as number]] : []))) as Record<string, number>;

  // One API key per uploader: each is a principal of its own, as 50 separate uploaders would be.
  const keys: Array<{ key_id: string; key: string }> = [];
  for (let i = 0; i < uploaders; i++) {
    const r = await api(jwt, 'POST', '/api/v1/api_keys', { name: `load-bench-${i}`, role: 'USER' });
    if (r.status !== 201) throw new Error(`api key answered ${r.status}: ${JSON.stringify(r.body)}`);
    keys.push({ key_id: r.body.key_id as string, key: r.body.key as string });
  }

  const images = await imagePool();
  const ids: string[] = [];
  const imageIds: string[] = [];
  const failures: Failure[] = [];
  const failed = Object.fromEntries(ENDPOINTS.map((e) => [e, 0])) as Record<Endpoint, number>;
  const times = Object.fromEntries(ENDPOINTS.map((e) => [e, [] as number[]])) as Record<Endpoint, number[]>;
  // Transforms: links kept per image and variant; the cdn GET's latency by the tier's X-Cache-Status (and the edge's
  // X-Cache on a tier miss); bytes served.
  const links = new Map<string, string>();
  const tierTimes: Record<string, number[]> = {};
  const edgeOnTierMiss: Record<string, number> = {};
  const transformFormats: Record<string, number> = {};
  let transformBytes = 0;
  let transformBusy = 0;
  // Bulk console actions: the assets they uploaded (deleted by them; the clean-up takes any left), and per cycle
  // the seconds from the upload until all were processed, from the process requests until their jobs ended, and
  // the whole cycle; job outcomes.
  const bulkIds: string[] = [];
  const bulkLeft = new Set<string>();
  const bulkCycles = { done: 0, processedS: [] as number[], jobsS: [] as number[], cycleS: [] as number[], jobs: {} as Record<string, number> };
  const bySize = SIZE_CLASSES.map(() => [] as number[]);
  const kinds = { image: 0, bin: 0 };
  let uploadedBytes = 0;
  const fail = (endpoint: Endpoint, status: number, body: string) => {
    failed[endpoint] += 1;
    if (failures.length < 20) failures.push({ endpoint, status, body: body.slice(0, 300) });
  };

  // A few assets first, so readers have something to read from the first second.
  for (let i = 0; i < 4; i++) {
    const form = new FormData();
    form.append('file', new Blob([(images[i] as Image).bytes]), `load-seed-${i}.${(images[i] as Image).ext}`);
    const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: form });
    if (res.status !== 200) throw new Error(`seed upload answered ${res.status}: ${await res.text()}`);
    const seeded = ((await res.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id);
    ids.push(...seeded);
    imageIds.push(...seeded);
  }

  // Sampling: every service each second, and the backlogs during the run.
  const samples: Record<string, ProcSample[]> = Object.fromEntries(Object.keys(pids).map((s) => [s, []]));
  const baseline = Object.fromEntries(Object.entries(pids).map(([s, pid]) => [s, procSample(pid, 0)]));
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([s, pid]) => [s, cpuSeconds(pid)]));
  const benchCpuBefore = process.cpuUsage();
  const tierPid = pidOf('cdn-tier');
  const infra = { ...infraPids(), ...(tierPid ? { 'cdn-tier': tierPid } : {}) };
  const infraCpuBefore = Object.fromEntries(Object.entries(infra).map(([s, pid]) => [s, treeCpuSeconds(pid)]));
  const machineBefore = machineCpu();
  const lagMax: Record<string, number> = Object.fromEntries(Object.keys(pids).map((s) => [s, 0]));
  const heap: Record<string, Array<{ t: number } & Omit<Runtime, 'lagMaxS'>>> = Object.fromEntries(Object.keys(pids).map((s) => [s, []]));
  await Promise.all(Object.keys(pids).map((s) => runtimeMetrics(s).catch(() => undefined))); // resets each service's maximum
  const loadBefore = loadAverage();
  let loadMax = loadBefore[0] as number;
  const backlogDuring = { outboxMax: 0, consumersMax: 0, consumersMaxBy: {} as Record<string, number> };
  const ephemeralBefore = (await consumerBacklog(jsm)).ephemeral;
  const t0 = performance.now();
  const elapsed = () => (performance.now() - t0) / 1000;
  const deadline = t0 + seconds * 1000;
  const sampler = setInterval(() => {
    const t = elapsed();
    for (const [s, pid] of Object.entries(pids)) samples[s]?.push(procSample(pid, t));
    loadMax = Math.max(loadMax, loadAverage()[0] as number);
  }, 1000);
  // Event-loop delay (prom-client's maximum since the previous scrape) and heap in use, every 5 s.
  const lagSampler = setInterval(() => {
    for (const s of Object.keys(pids)) {
      const t = elapsed();
      void runtimeMetrics(s)
        .then((m) => {
          lagMax[s] = Math.max(lagMax[s] ?? 0, m.lagMaxS);
          heap[s]?.push({ t, heapUsedBytes: m.heapUsedBytes, heapTotalBytes: m.heapTotalBytes, externalBytes: m.externalBytes });
        })
        .catch(() => undefined);
    }
  }, 5000);
  let backlogBusy = false;
  const backlogSampler = setInterval(() => {
    if (backlogBusy) return;
    backlogBusy = true;
    void Promise.all([outboxRows(), consumerBacklog(jsm)])
      .then(([outbox, consumers]) => {
        backlogDuring.outboxMax = Math.max(backlogDuring.outboxMax, outbox);
        if (consumers.total > backlogDuring.consumersMax) {
          backlogDuring.consumersMax = consumers.total;
          backlogDuring.consumersMaxBy = Object.fromEntries(Object.entries(consumers.byConsumer).filter(([, n]) => n > 0));
        }
      })
      .catch(() => undefined)
      .finally(() => {
        backlogBusy = false;
      });
  }, 1000);

  const uploader = async (index: number) => {
    const random = rng(SEED * 1000 + index);
    const key = (keys[index] as { key: string }).key;
    for (let n = 0; performance.now() < deadline; n++) {
      const file = nextFile(random, images, index * 100_000 + n);
      const form = new FormData();
      form.append('file', file.body, file.name);
      const start = performance.now();
      try {
        const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: { 'x-service-api-key': key }, body: form });
        const text = await res.text();
        const ms = performance.now() - start;
        if (res.status !== 200) {
          fail('upload', res.status, text);
          continue;
        }
        times.upload.push(ms);
        bySize[SIZE_CLASSES.findIndex((c) => file.size <= c.max)]?.push(ms);
        uploadedBytes += file.size;
        kinds[file.kind] += 1;
        const stored = (JSON.parse(text) as { files: Array<{ id: string }> }).files.map((f) => f.id);
        ids.push(...stored);
        if (file.kind === 'image') imageIds.push(...stored);
      } catch (error) {
        fail('upload', 0, String(error));
      }
    }
  };

  // A transform link: Get Link with the variant's parameters the first time an image and variant are drawn, then
  // the cdn URL through the tier.
  const transform = async (random: () => number) => {
    const pool = random() < 0.5 ? Math.min(POPULAR_IMAGES, imageIds.length) : imageIds.length;
    const id = imageIds[Math.floor(random() * pool)] as string;
    const variant = Math.floor(random() * VARIANTS.length);
    const accept = ACCEPTS[Math.floor(random() * ACCEPTS.length)] as string;
    let url = links.get(`${id}|${variant}`);
    if (!url) {
      const start = performance.now();
      try {
        const res = await fetch(`${BASE}/api/v1/assets/${id}/get_link?delivery=display&expiry=3600&${VARIANTS[variant] as string}`, { headers: auth });
        const text = await res.text();
        if (res.status !== 200) return fail('transformLink', res.status, text);
        times.transformLink.push(performance.now() - start);
        url = (JSON.parse(text) as { url: string }).url;
        links.set(`${id}|${variant}`, url);
      } catch (error) {
        return fail('transformLink', 0, String(error));
      }
    }
    const start = performance.now();
    try {
      let res = await fetch(url, { headers: { accept } });
      let body = await res.arrayBuffer();
      // 503 TRANSFORMS_BUSY (conversion's on-demand transform slots, TRANSFORM_CONCURRENCY, all taken) comes with
      // Retry-After: asked again after it, as the contract tells a client to (at most 3 times; the wait is in the
      // latency). Counted apart; an error only when the last answer is not 200.
      for (let retry = 0; retry < 3 && res.status === 503 && res.headers.get('retry-after'); retry++) {
        transformBusy += 1;
        await sleep(Number(res.headers.get('retry-after')) * 1000);
        res = await fetch(url, { headers: { accept } });
        body = await res.arrayBuffer();
      }
      const ms = performance.now() - start;
      if (res.status !== 200) return fail('transformGet', res.status, `${url.replace(/signature=.*/, 'signature=…')}: ${Buffer.from(body).toString('utf8')}`);
      times.transformGet.push(ms);
      transformBytes += body.byteLength;
      const tier = res.headers.get('x-cache-status') ?? 'none';
      (tierTimes[tier] ??= []).push(ms);
      if (tier !== 'HIT') edgeOnTierMiss[res.headers.get('x-cache') ?? 'none'] = (edgeOnTierMiss[res.headers.get('x-cache') ?? 'none'] ?? 0) + 1;
      const type = res.headers.get('content-type') ?? 'none';
      transformFormats[type] = (transformFormats[type] ?? 0) + 1;
    } catch (error) {
      fail('transformGet', 0, String(error));
    }
  };

  // One console request of the bulk actions, timed; its parsed body, or undefined when it failed (counted).
  const consoleCall = async (endpoint: Endpoint, method: string, url: string, body?: unknown): Promise<Record<string, unknown> | undefined> => {
    const start = performance.now();
    try {
      const res = await fetch(`${BASE}${url}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (res.status < 200 || res.status >= 300) return void fail(endpoint, res.status, `${method} ${url}: ${text}`);
      times[endpoint].push(performance.now() - start);
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch (error) {
      return void fail(endpoint, 0, `${method} ${url}: ${String(error)}`);
    }
  };
  const notReadyOf = async (list: readonly string[]) =>
    (await db.query<{ id: string }>("SELECT id FROM assets WHERE id = ANY($1::text[]) AND status = 'NOT_READY'", [list])).rows.map((r) => r.id);
  const small = images.filter((i) => i.bytes.length <= 300 * KB);

  // A console user's bulk actions, over and over on batches it uploads (see the header).
  const bulkClient = async (index: number) => {
    for (let cycle = 0; performance.now() < deadline; cycle++) {
      const cycleStart = performance.now();
      const form = new FormData();
      for (let i = 0; i < BULK_BATCH; i++) {
        const image = small[(cycle + i) % small.length] as Image;
        form.append(`file${i}`, new Blob([image.bytes]), `bulk-${index}-${cycle}-${i}.${image.ext}`);
      }
      let batch: string[] = [];
      const start = performance.now();
      try {
        const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: form });
        const text = await res.text();
        if (res.status !== 200) fail('bulkUpload', res.status, text);
        else {
          times.bulkUpload.push(performance.now() - start);
          batch = (JSON.parse(text) as { files: Array<{ id: string }> }).files.map((f) => f.id);
          bulkIds.push(...batch);
          for (const id of batch) bulkLeft.add(id);
        }
      } catch (error) {
        fail('bulkUpload', 0, String(error));
      }
      if (batch.length === 0) {
        await sleep(1000);
        continue;
      }
      const selected = await consoleCall('bulkSelect', 'POST', '/api/v1/collections/SELECTED_ASSETS/assets', { ids: batch });
      const collection = await consoleCall('bulkCollection', 'POST', '/api/v1/collections', { name: `load-bulk-${index}-${cycle}`, shared: false });
      if (collection) await consoleCall('bulkCollection', 'POST', `/api/v1/collections/${collection.collection_id as string}/assets`, { ids: batch });
      await consoleCall('bulkLinks', 'POST', '/api/v1/assets/get_link', { ids: batch, key: 'original', link_type: 'cdn', delivery: 'download', expiry: 3600 });
      // Process again once processed (the console offers it then: a NOT_READY asset answers 400 ASSET_NOT_READY). The
      // waits end with the load: the last cycle then goes straight to the delete.
      let pending = batch;
      while (pending.length > 0 && performance.now() < deadline) {
        await sleep(500);
        pending = await notReadyOf(pending);
      }
      if (pending.length === 0) bulkCycles.processedS.push((performance.now() - start) / 1000);
      const jobs: number[] = [];
      const processStart = performance.now();
      await eachOf(performance.now() < deadline ? batch.filter((id) => !pending.includes(id)) : [], async (id) => {
        const job = await consoleCall('bulkProcess', 'POST', `/api/v1/assets/${id}/process`, { keys: ['smart_imaging'] });
        if (job) jobs.push(job.job_id as number);
      });
      let open = jobs;
      while (open.length > 0 && performance.now() < deadline) {
        await sleep(1000);
        const still: number[] = [];
        await eachOf(open, async (jobId) => {
          const job = await consoleCall('bulkJobs', 'GET', `/api/v1/jobs/${jobId}`);
          if (job?.status === 'COMPLETED' || job?.status === 'ERROR') bulkCycles.jobs[job.status as string] = (bulkCycles.jobs[job.status as string] ?? 0) + 1;
          else still.push(jobId);
        });
        open = still;
      }
      if (open.length > 0) bulkCycles.jobs.openAtTheEnd = (bulkCycles.jobs.openAtTheEnd ?? 0) + open.length;
      else if (jobs.length > 0) bulkCycles.jobsS.push((performance.now() - processStart) / 1000);
      await eachOf(batch, async (id) => {
        if (await consoleCall('bulkDelete', 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })) bulkLeft.delete(id);
      });
      if (selected) await consoleCall('bulkUnselect', 'DELETE', '/api/v1/collections/SELECTED_ASSETS/assets', { ids: batch });
      if (collection) await consoleCall('bulkCollection', 'DELETE', `/api/v1/collections/${collection.collection_id as string}`);
      bulkCycles.done += 1;
      bulkCycles.cycleS.push((performance.now() - cycleStart) / 1000);
    }
  };

  const reader = async (index: number) => {
    const random = rng(SEED * 1000 + 500 + index);
    while (performance.now() < deadline) {
      if (random() < TRANSFORM_SHARE) {
        await transform(random);
        if (READ_PAUSE_MS > 0) await sleep(READ_PAUSE_MS);
        continue;
      }
      const getData = random() < 0.75;
      const endpoint: Endpoint = getData ? 'getData' : 'search';
      const start = performance.now();
      try {
        const res = getData
          ? await fetch(`${BASE}/api/v1/assets/${ids[Math.floor(random() * ids.length)] as string}/data`, { headers: auth })
          : await fetch(`${BASE}/api/v1/assets/search`, {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify(searchBody(random)),
            });
        const text = await res.text();
        if (res.status >= 200 && res.status < 300) times[endpoint].push(performance.now() - start);
        else fail(endpoint, res.status, text);
      } catch (error) {
        fail(endpoint, 0, String(error));
      }
      if (READ_PAUSE_MS > 0) await sleep(READ_PAUSE_MS);
    }
  };

  await Promise.all([
    ...Array.from({ length: uploaders }, (_, i) => uploader(i)),
    ...Array.from({ length: readers }, (_, i) => reader(i)),
    ...Array.from({ length: BULK_CLIENTS }, (_, i) => bulkClient(i)),
  ]);
  const loadSeconds = elapsed();
  clearInterval(sampler);
  clearInterval(backlogSampler);
  clearInterval(lagSampler);
  const machineAfter = machineCpu();
  const infraCpu = Object.fromEntries(Object.entries(infra).map(([s, pid]) => [s, round(treeCpuSeconds(pid) - (infraCpuBefore[s] as number))]));
  const loadAfter = loadAverage();
  const cpu = Object.fromEntries(Object.entries(pids).map(([s, pid]) => [s, round(cpuSeconds(pid) - (cpuBefore[s] as number))]));
  const benchCpu = process.cpuUsage(benchCpuBefore);
  const benchCpuS = round((benchCpu.user + benchCpu.system) / 1e6);
  const machineBusy = machineAfter.busy - machineBefore.busy;
  const ours = [...Object.values(cpu), ...Object.values(infraCpu), benchCpuS].reduce((a, b) => a + b, 0);

  // The drain: from the end of the load until nothing uploaded is NOT_READY, the outbox is empty and every durable
  // consumer has nothing pending nor unacknowledged.
  const tEnd = performance.now();
  const sinceEnd = () => round((performance.now() - tEnd) / 1000, 2);
  const notReadyCount = async () =>
    Number((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM assets WHERE id = ANY($1::text[]) AND status = 'NOT_READY'", [ids])).rows[0]?.n);
  const atEnd = { notReady: await notReadyCount(), outbox: await outboxRows(), consumers: (await consumerBacklog(jsm)).total };
  const drained: { processedS: number | null; outboxS: number | null; consumersS: number | null; backlogsS: number | null } = {
    processedS: null,
    outboxS: null,
    consumersS: null,
    backlogsS: null,
  };
  let lastConsumers: Record<string, number> = {};
  let lastNotReady = atEnd.notReady;
  let lastOutbox = atEnd.outbox;
  while (sinceEnd() < DRAIN_TIMEOUT_S) {
    const [notReady, outbox, consumers] = await Promise.all([notReadyCount(), outboxRows(), consumerBacklog(jsm)]);
    const at = sinceEnd();
    [lastNotReady, lastOutbox, lastConsumers] = [notReady, outbox, consumers.byConsumer];
    if (notReady === 0) drained.processedS ??= at;
    if (outbox === 0) drained.outboxS ??= at;
    if (consumers.total === 0) drained.consumersS ??= at;
    if (outbox === 0 && consumers.total === 0) drained.backlogsS ??= at;
    if (notReady === 0 && outbox === 0 && consumers.total === 0) break;
    await sleep(250);
  }
  const ephemeralAfter = (await consumerBacklog(jsm)).ephemeral;
  const inError = Number(
    (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM assets WHERE id = ANY($1::text[]) AND status = 'ERROR'", [ids])).rows[0]?.n,
  );
  const statuses = Object.fromEntries(
    (await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM assets WHERE id = ANY($1::text[]) GROUP BY status', [ids])).rows.map(
      (r) => [r.status, r.n],
    ),
  );
  await sleep(2000); // let the last requests' sockets and pool connections settle before the "after" reading
  const after = Object.fromEntries(Object.entries(pids).map(([s, pid]) => [s, procSample(pid, elapsed())]));

  const memory: Record<string, unknown> = {};
  const descriptors: Record<string, unknown> = {};
  const rssHeld: string[] = [];
  const rssGrew: string[] = [];
  const fdsHeld: string[] = [];
  const fdsGrew: string[] = [];
  for (const [s, list] of Object.entries(samples)) {
    const warm = list.filter((x) => x.t >= 0.15 * loadSeconds && x.t <= 0.25 * loadSeconds);
    const end = list.filter((x) => x.t >= 0.9 * loadSeconds);
    const mib = (kb: number) => round(kb / 1024, 0);
    const rss = {
      before: mib(baseline[s]?.rssKb ?? NaN),
      warmUp: mib(median(warm.map((x) => x.rssKb))),
      end: mib(median(end.map((x) => x.rssKb))),
      max: mib(Math.max(...list.map((x) => x.rssKb))),
      after: mib(after[s]?.rssKb ?? NaN),
    };
    const fds = {
      before: baseline[s]?.fds ?? NaN,
      warmUp: median(warm.map((x) => x.fds)),
      end: median(end.map((x) => x.fds)),
      max: Math.max(...list.map((x) => x.fds)),
      after: after[s]?.fds ?? NaN,
    };
    const rssOk = rss.end <= rss.warmUp * 1.2;
    const fdsOk = fds.end <= fds.warmUp * 1.2;
    const heapOf = (from: number, to: number, key: keyof Omit<Runtime, 'lagMaxS'> = 'heapUsedBytes') =>
      mib(median((heap[s] ?? []).filter((x) => x.t >= from * loadSeconds && x.t <= to * loadSeconds).map((x) => x[key] / 1024)));
    memory[s] = {
      ...rss,
      held: rssOk,
      // MiB per minute from the warm-up to the end (least squares over the 1 s samples): growth that goes on, or not.
      trendPerMin: round(slope(list.filter((x) => x.t >= 0.2 * loadSeconds).map((x) => ({ t: x.t, y: x.rssKb / 1024 }))) * 60),
      // The same over the last half only: growth that levels off shows here as a trend near 0.
      trendLastHalfPerMin: round(slope(list.filter((x) => x.t >= 0.5 * loadSeconds).map((x) => ({ t: x.t, y: x.rssKb / 1024 }))) * 60),
      heapUsed: { warmUp: heapOf(0.1, 0.3), end: heapOf(0.85, 1) },
      heapCommitted: { warmUp: heapOf(0.1, 0.3, 'heapTotalBytes'), end: heapOf(0.85, 1, 'heapTotalBytes') },
      external: { warmUp: heapOf(0.1, 0.3, 'externalBytes'), end: heapOf(0.85, 1, 'externalBytes') },
    };
    descriptors[s] = { ...fds, held: fdsOk };
    (rssOk ? rssHeld : rssGrew).push(s);
    (fdsOk ? fdsHeld : fdsGrew).push(s);
  }
  const failedTotal = Object.values(failed).reduce((a, b) => a + b, 0);

  // Clean up: every uploaded asset to the trash (the bulk clients' own that they did not delete), the trash purged,
  // the keys revoked.
  const cleanup = { deleted: 0, errors: 0, purge: '' };
  const toDelete = [...ids, ...bulkLeft];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < toDelete.length) {
        const id = toDelete[next++] as string;
        const r = await api(jwt, 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] }).catch(() => ({ status: 0 }));
        if (r.status === 200) cleanup.deleted += 1;
        else cleanup.errors += 1;
      }
    }),
  );
  const purge = await api(jwt, 'DELETE', '/api/v1/assets/trash/purge');
  cleanup.purge = String(purge.status);
  if (purge.status === 202) {
    for (let i = 0; i < 600; i++) {
      const job = await api(jwt, 'GET', `/api/v1/jobs/${purge.body.job_id as number}`);
      if (job.body?.status === 'COMPLETED' || job.body?.status === 'ERROR') {
        cleanup.purge = job.body.status as string;
        break;
      }
      await sleep(500);
    }
  }
  for (const k of keys) await api(jwt, 'DELETE', `/api/v1/api_keys/${k.key_id}`);
  // Memory once the suite has been quiet a while (the drain, the clean-up, then IDLE_WAIT_S): what the services
  // give back. A service that grew under load and is back near where it started kept no growth.
  await sleep(IDLE_WAIT_S * 1000);
  const idleRss = Object.fromEntries(Object.entries(pids).map(([s, pid]) => [s, round(procSample(pid, elapsed()).rssKb / 1024, 0)]));
  const returnedWhenIdle = rssGrew.filter((s) => (idleRss[s] as number) <= ((baseline[s]?.rssKb ?? 0) / 1024) * 1.2);
  const grewForGood = rssGrew.filter((s) => !returnedWhenIdle.includes(s));
  await nc.close();
  await db.end();
  if (SERIES_FILE) {
    // Every 10th RSS sample (one each 10 s) and every runtime reading, per service, in MiB: for plotting.
    const series = Object.fromEntries(
      Object.keys(pids).map((s) => [
        s,
        {
          rss: (samples[s] ?? []).filter((_, i) => i % 10 === 0).map((x) => [round(x.t, 0), round(x.rssKb / 1024, 0), x.fds]),
          runtime: (heap[s] ?? []).map((x) => [
            round(x.t, 0),
            round(x.heapUsedBytes / 2 ** 20, 0),
            round(x.heapTotalBytes / 2 ** 20, 0),
            round(x.externalBytes / 2 ** 20, 0),
          ]),
        },
      ]),
    );
    writeFileSync(
      SERIES_FILE,
      JSON.stringify({ columns: { rss: ['s', 'rssMiB', 'fds'], runtime: ['s', 'heapUsedMiB', 'heapCommittedMiB', 'externalMiB'] }, series }),
    );
  }

  console.log(
    JSON.stringify({
      uploaders,
      readers,
      seconds: round(loadSeconds),
      seed: SEED,
      errors: failedTotal,
      errorsBy: failed,
      errorSamples: failures,
      upload: {
        ...latency(times.upload, loadSeconds),
        MBps: round(uploadedBytes / 1e6 / loadSeconds),
        MB: round(uploadedBytes / 1e6, 0),
        images: kinds.image,
        bin: kinds.bin,
        bySize: Object.fromEntries(SIZE_CLASSES.map((c, i) => [c.name, latency(bySize[i] as number[], loadSeconds)])),
      },
      getData: latency(times.getData, loadSeconds),
      search: latency(times.search, loadSeconds),
      transforms: {
        share: TRANSFORM_SHARE,
        link: latency(times.transformLink, loadSeconds),
        get: latency(times.transformGet, loadSeconds),
        byTierStatus: Object.fromEntries(Object.entries(tierTimes).map(([k, v]) => [k, latency(v, loadSeconds)])),
        hitRatio: round((tierTimes.HIT?.length ?? 0) / Math.max(1, times.transformGet.length), 3),
        edgeOnTierMiss,
        busy503RetriedAfter: transformBusy,
        linksKept: links.size,
        formats: transformFormats,
        MB: round(transformBytes / 1e6),
      },
      bulk: {
        clients: BULK_CLIENTS,
        batch: BULK_BATCH,
        cycles: bulkCycles.done,
        assets: bulkIds.length,
        ...Object.fromEntries(ENDPOINTS.filter((e) => e.startsWith('bulk')).map((e) => [e, latency(times[e], loadSeconds)])),
        processedS: { p50: round(median(bulkCycles.processedS)), max: round(Math.max(...bulkCycles.processedS, 0)) },
        jobsS: { p50: round(median(bulkCycles.jobsS)), max: round(Math.max(...bulkCycles.jobsS, 0)) },
        cycleS: { p50: round(median(bulkCycles.cycleS)), max: round(Math.max(...bulkCycles.cycleS, 0)) },
        jobs: bulkCycles.jobs,
      },
      drain: {
        target: 'outbox and consumers at 0 within 10 s',
        atEnd,
        ...drained,
        met: drained.backlogsS !== null && drained.backlogsS <= 10,
        ...(drained.processedS === null || drained.backlogsS === null
          ? { left: { notReady: lastNotReady, outbox: lastOutbox, consumers: Object.fromEntries(Object.entries(lastConsumers).filter(([, n]) => n > 0)) } }
          : {}),
        duringLoad: backlogDuring,
        ephemeralConsumers: { before: ephemeralBefore, after: ephemeralAfter },
      },
      assets: { uploaded: ids.length, statuses, inError },
      rssMiB: memory,
      rssFlat: { held: rssHeld, returnedWhenIdle, grew: grewForGood },
      rssIdleMiB: { afterS: IDLE_WAIT_S, ...idleRss },
      fds: descriptors,
      fdsFlat: { held: fdsHeld, grew: fdsGrew },
      cpuSeconds: {
        services: cpu,
        infra: infraCpu,
        bench: benchCpuS,
        machine: {
          available: round(machineAfter.total - machineBefore.total),
          busy: round(machineBusy),
          iowait: round(machineAfter.iowait - machineBefore.iowait),
          otherProcesses: round(machineBusy - ours),
        },
      },
      eventLoopLagMaxS: Object.fromEntries(Object.entries(lagMax).map(([s, v]) => [s, round(v, 2)])),
      loadAverage: { before: loadBefore, after: loadAfter, max1m: loadMax },
      cleanup,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
