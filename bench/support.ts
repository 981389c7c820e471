/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON */
/** What the benchmarks share: the suite's addresses, login, settings, waiting for assets, and memory sampling. */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'minio';
import sharp from 'sharp';

export const BASE = process.env.DAM_BASE_URL ?? 'http://127.0.0.1:8080';
export const UPLOAD = process.env.DAM_UPLOAD_URL ?? 'http://127.0.0.1:8081';
export const DATA = process.env.DAM_DATA_DIR ?? path.join(__dirname, '..', '.data');

export async function login(): Promise<string> {
  const res = await fetch(`${BASE}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: process.env.ADMIN_EMAIL ?? 'admin@example.com', password: process.env.ADMIN_PASSWORD ?? 'admin-password' }),
  });
  if (res.status !== 200) throw new Error(`login answered ${res.status}`);
  return ((await res.json()) as { jwt: string }).jwt;
}

export async function api(jwt: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${BASE}${url}`, {
    method,
    headers: { authorization: `Bearer ${jwt}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/**
 * Changes the group's settings. Workers read settings fresh by default (SETTINGS_CACHE_MS 0); for a suite started
 * with a cache, `SETTINGS_WAIT_MS` waits it out so the run uses the new settings.
 */
export async function applySettings(jwt: string, patch: unknown): Promise<void> {
  const res = await api(jwt, 'PATCH', '/api/v1/settings', patch);
  if (res.status !== 200) throw new Error(`settings answered ${res.status}: ${JSON.stringify(res.body)}`);
  await new Promise((r) => setTimeout(r, Number(process.env.SETTINGS_WAIT_MS ?? 0)));
}

/** Uploads files in one request; returns the asset ids in order. */
export async function uploadFiles(jwt: string, files: Array<{ bytes: Buffer; name: string }>): Promise<string[]> {
  const form = new FormData();
  files.forEach((f, i) => form.append(`file${i}`, new Blob([f.bytes]), f.name));
  const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` }, body: form });
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id);
}

/**
 * The newest jobs (one request, not one per job: the gateway rate-limits each caller, 1200 a minute by default).
 */
async function recentJobs(jwt: string): Promise<Array<{ job_id: number; status: string; asset_ids: string[]; error: string | null; updated_at: string }>> {
  const { status, body } = await api(jwt, 'GET', '/api/v1/jobs?type=processing&page_size=100');
  if (status !== 200) throw new Error(`jobs answered ${status}: ${JSON.stringify(body)}`);
  return body.items;
}

/**
 * Polls until every job ended; throws when one ended in ERROR. Returns when the last one ended (epoch ms, the
 * server's clock: the same machine), so a slow poll does not stretch the measured time and polling can be rare
 * (it costs the suite CPU).
 */
export async function untilJobsDone(jwt: string, jobIds: readonly number[], intervalMs = 500): Promise<number> {
  const pending = new Set(jobIds);
  let last = 0;
  while (pending.size > 0) {
    for (const job of await recentJobs(jwt)) {
      if (!pending.has(job.job_id)) continue;
      if (job.status === 'ERROR') throw new Error(`job ${job.job_id} ERROR: ${job.error}`);
      if (job.status === 'COMPLETED') {
        pending.delete(job.job_id);
        last = Math.max(last, Date.parse(job.updated_at));
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, intervalMs));
  }
  return last;
}

/**
 * Polls until the processing job of every asset ended and the asset is OK (the same transaction ends the job and
 * makes the asset OK); throws on ERROR. Returns when the last one ended (epoch ms, the server's clock).
 */
export async function untilOk(jwt: string, ids: readonly string[], intervalMs = 100): Promise<number> {
  const pending = new Set(ids);
  let last = 0;
  while (pending.size > 0) {
    for (const job of await recentJobs(jwt)) {
      const id = job.asset_ids.find((a) => pending.has(a));
      if (!id || (job.status !== 'COMPLETED' && job.status !== 'ERROR')) continue;
      const { status, body } = await api(jwt, 'GET', `/api/v1/assets/${id}/data`);
      if (status !== 200) throw new Error(`data of ${id} answered ${status}: ${JSON.stringify(body)}`);
      if (body.status === 'ERROR') throw new Error(`asset ${id} ERROR: ${JSON.stringify(body.errors)}`);
      if (body.status === 'OK') {
        pending.delete(id);
        last = Math.max(last, Date.parse(job.updated_at));
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, intervalMs));
  }
  return last;
}

/** Uploads each file in a request of its own, at most `inFlight` at once (a user may run 8 by default). */
export async function uploadEach(jwt: string, files: Array<{ bytes: Buffer; name: string }>, inFlight = 8): Promise<string[]> {
  const ids: string[] = new Array<string>(files.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, files.length) }, async () => {
      while (next < files.length) {
        const i = next++;
        const [id] = await uploadFiles(jwt, [files[i] as { bytes: Buffer; name: string }]);
        ids[i] = id as string;
      }
    }),
  );
  return ids;
}

/** The pid of a service started by deploy/local/up. */
export const servicePid = (service: string): number => Number(readFileSync(path.join(DATA, 'run', `${service}.pid`), 'utf8'));

/** A process and every descendant (PostgreSQL's backends, ffmpeg children), from /proc; ones gone meanwhile are skipped. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const p = Number(entry);
    if (!Number.isInteger(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), p]);
    } catch {
      // gone meanwhile
    }
  }
  const tree: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const p = queue.pop() as number;
    tree.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return tree;
}

/** Sums `read(pid)` over a process tree; a process gone meanwhile counts 0. */
export function sumOverTree(root: number, read: (pid: number) => number): number {
  let total = 0;
  for (const p of processTree(root)) {
    try {
      total += read(p);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** utime + stime of a process, seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds of a process and every descendant (PostgreSQL's backends, ffmpeg children), from /proc. */
export const treeCpuSeconds = (root: number): number => sumOverTree(root, cpuSeconds);

/** The infrastructure deploy/local started (pid files under the data folder). */
export function infraPids(): Record<string, number> {
  const files: Record<string, string> = {
    nats: 'nats/nats.pid',
    postgres: 'pg/postmaster.pid',
    radosgw: 's3/run/client.rgw.a.pid',
    'ceph-osd': 's3/run/osd.0.pid',
    'ceph-mon': 's3/run/mon.a.pid',
  };
  const out: Record<string, number> = {};
  for (const [name, file] of Object.entries(files)) {
    try {
      const pid = Number(readFileSync(path.join(DATA, file), 'utf8').split('\n')[0]?.trim());
      if (Number.isInteger(pid) && pid > 0) out[name] = pid;
    } catch {
      // not started by deploy/local
    }
  }
  return out;
}

/** The machine's CPU time (seconds, all cores): busy, iowait, and total, from /proc/stat. */
export function machineCpu(): { busy: number; iowait: number; total: number } {
  const [, ...fields] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/);
  const v = fields.map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0) / 100;
  const idle = (v[3] ?? 0) / 100;
  const iowait = (v[4] ?? 0) / 100;
  return { busy: total - idle - iowait, iowait, total };
}

/** The services deploy/local/up starts. */
export const SERVICES = ['gateway', 'upload', 'link-signing', 'auth', 'metadata', 'search', 'conversion', 'transcode', 'addon', 'webhook'] as const;

/**
 * CPU seconds used by each service and each piece of infrastructure deploy/local started (with their children)
 * from now until `stop()`: where the time of a run went.
 */
export function meterSuiteCpu(): { stop(): Record<string, number> } {
  const roots: Record<string, number> = { ...infraPids() };
  for (const s of SERVICES) {
    try {
      roots[s] = servicePid(s);
    } catch {
      // not started
    }
  }
  const read = () => Object.fromEntries(Object.entries(roots).map(([name, pid]) => [name, treeCpuSeconds(pid)]));
  const before = read();
  return {
    stop() {
      const after = read();
      return Object.fromEntries(
        Object.entries(after)
          .map(([name, s]) => [name, Math.round((s - (before[name] ?? 0)) * 100) / 100] as const)
          .filter(([, s]) => s > 0)
          .sort((a, b) => b[1] - a[1]),
      );
    },
  };
}

/** The CPU seconds of a `meterSuiteCpu` reading (or several processes) added up, to the hundredth. */
export const totalCpu = (cpu: Record<string, number>): number => Math.round(Object.values(cpu).reduce((a, b) => a + b, 0) * 100) / 100;

/** Resident memory (kB) of a process and all its descendants (ffmpeg children included), from /proc. */
export function treeRssKb(pid: number): number {
  return sumOverTree(pid, (p) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0));
}

/** `KEY=value` lines of an env file deploy/local wrote (values may be single-quoted). */
export function envOf(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^'|'$/g, '')]),
  );
}

/** Samples a service's memory (with its children) every `intervalMs` until stopped; returns MiB figures. */
export function sampleRss(pid: number, intervalMs = 50): { stop(): { baselineMb: number; peakMb: number } } {
  const baseline = treeRssKb(pid);
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRssKb(pid));
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return { baselineMb: Math.round(baseline / 1024), peakMb: Math.round(peak / 1024) };
    },
  };
}

export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
};

/** A photo-like JPEG (gradient plus noise): compresses like a camera picture, not like a flat colour. */
export async function photo(seed: number, megapixels: number): Promise<Buffer> {
  const width = Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3));
  const height = Math.round((width * 3) / 4);
  const small = Buffer.alloc(400 * 300 * 3);
  for (let i = 0; i < small.length; i++) small[i] = (i * (seed + 7) + (randomBytes(1)[0] ?? 0)) & 0xff;
  return sharp(small, { raw: { width: 400, height: 300, channels: 3 } })
    .resize(width, height)
    .jpeg({ quality: 88 })
    .toBuffer();
}

export interface ConversionSpec {
  width?: number;
  height?: number;
  fit: string;
  format: string;
  quality: number;
}

/** The profile's custom image conversions as the group has them (bare scripts make the same ones). */
export async function profileSpecs(jwt: string): Promise<ConversionSpec[]> {
  const { body: settings } = await api(jwt, 'GET', '/api/v1/settings');
  const custom = settings.conversions?.custom ?? {};
  return (settings.conversions?.profile?.image ?? [])
    .filter((k: string) => custom[k])
    .map((k: string) => ({ fit: 'cover', format: 'webp', quality: 80, ...custom[k] }));
}

/**
 * One conversion with plain sharp, as the conversion service makes it (EXIF rotation applied; WebP and AVIF at effort
 * 2, services/conversion/src/adapters/image-processor.ts), so a comparison weighs the same encoder work.
 */
export const sharpConvert = (bytes: Buffer, spec: ConversionSpec): Promise<Buffer> =>
  sharp(bytes)
    .rotate()
    .resize({ width: spec.width, height: spec.height, fit: spec.fit as never })
    .toFormat(spec.format as never, { quality: spec.quality, ...(spec.format === 'webp' || spec.format === 'avif' ? { effort: 2 } : {}) })
    .toBuffer();

/** The suite's S3 server: deploy/local's address and credentials unless S3_* say otherwise. */
export const BENCH_S3 = {
  endpoint: process.env.S3_ENDPOINT ?? 'http://127.0.0.1:7480',
  accessKey: process.env.S3_ACCESS_KEY ?? 'localaccess',
  secretKey: process.env.S3_SECRET_KEY ?? 'localsecret123',
  region: 'us-east-1',
};

/** A minio client of the suite's S3 server (BENCH_S3). */
export function benchMinio(): Client {
  const s3 = new URL(BENCH_S3.endpoint);
  return new Client({
    endPoint: s3.hostname,
    port: Number(s3.port || 80),
    useSSL: s3.protocol === 'https:',
    accessKey: BENCH_S3.accessKey,
    secretKey: BENCH_S3.secretKey,
    region: BENCH_S3.region,
    pathStyle: true,
  });
}
