/**
 * The byte paths' CPU per GiB (issue 33): what the suite's processes spend to move a GiB on each byte path, beside
 * the two references a deployment could put in front of the same object store instead, in the same run:
 * - a bare Node proxy (http.createServer piping each request to an http.request of the same path on S3, both ways);
 * - nginx (Debian's, a generated configuration: proxy_pass to S3, as its own process on a free port).
 *
 *   RATE_LIMIT_PER_MINUTE=0 RATE_LIMIT_ADDRESS_PER_MINUTE=0 deploy/local/up
 *   pnpm exec tsx bench/byte-cpu.bench.ts [sizeMiB=256] [transfers=ceil(1024/sizeMiB)]
 *
 * Paths (curl is the client, one transfer at a time):
 * - upload: POST {upload} multipart, against a PUT of the same file (presigned) through each reference;
 * - base: Get Download of the original through {base} (the gateway streams it from S3);
 * - edgeMiss / edgeHit: a `cdn` link at link-signing's edge itself (EDGE_URL, 8083 with the tier): the first read of
 *   each uploaded asset (from S3, filling the edge's byte cache), then reads of one of them from that cache;
 * - tierHit: the same link through the `{cdn}` tier (nginx, 8082), warmed first;
 * - references: GET of the presigned object URL through each reference.
 * CPU is utime + stime from /proc of gateway, upload, metadata, link-signing, auth and the tier's nginx (master and
 * workers), less what they use idle (measured before the paths for IDLE_SECONDS, 5); the S3 server (radosgw and
 * ceph-osd) and the client (curl, from the shell's `times`) are listed apart: the same on every path. Prints one
 * JSON line: per path CPU s/GiB, MiB/s and the ratio to the cheaper reference. Deletes what it stored.
 * The machine's other work moves these figures by ±20-30 % from run to run: compare runs made one after the other.
 * To see where a path's CPU goes: deploy/local/up with DAM_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" (a profile per
 * service, written at deploy/local/down).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { BASE, BENCH_S3, DATA, UPLOAD, api, benchMinio, cpuSeconds, infraPids, login, servicePid, treeCpuSeconds } from './support';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const sizeMiB = Number(process.argv[2] ?? 256);
const transfers = Number(process.argv[3] ?? Math.ceil(1024 / sizeMiB));
const BUCKET = process.env.S3_BUCKET ?? 'dam-assets';
const EDGE = process.env.EDGE_URL ?? 'http://127.0.0.1:8083';
const CDN = process.env.DAM_CDN_URL ?? 'http://127.0.0.1:8082';
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 5);
const SUITE = ['gateway', 'upload', 'metadata', 'link-signing', 'auth'] as const;

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** CPU seconds of each process group of a run: the suite's services and tier, the S3 server, a reference. */
function readCpu(references: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of SUITE) {
    try {
      out[s] = cpuSeconds(servicePid(s));
    } catch {
      // not started
    }
  }
  try {
    out['cdn-tier'] = treeCpuSeconds(Number(readFileSync(path.join(DATA, 'run', 'cdn-tier.pid'), 'utf8')));
  } catch {
    // no tier (DAM_CDN_TIER=0)
  }
  const infra = infraPids();
  out.s3 = (infra.radosgw ? treeCpuSeconds(infra.radosgw) : 0) + (infra['ceph-osd'] ? treeCpuSeconds(infra['ceph-osd']) : 0);
  for (const [name, pid] of Object.entries(references)) out[name] = treeCpuSeconds(pid);
  return out;
}

const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

interface Transfer {
  code: number;
  size: number;
  seconds: number;
  cache: string;
}

/**
 * The transfers one after the other with curl, in one shell whose `times` gives the children's (curl's) CPU.
 * `%{size_upload}` for uploads, `%{size_download}` otherwise.
 */
async function curls(argLists: string[][]): Promise<{ transfers: Transfer[]; clientCpu: number }> {
  const script = [
    ...argLists.map(
      (args) =>
        `curl -s ${args.includes('-o') ? '' : '-o /dev/null'} -w '%{http_code} %{size_download} %{size_upload} %{time_total} %header{x-cache}%header{x-cache-status}\\n' ${args.map(shellQuote).join(' ')}`,
    ),
    'times',
  ].join('\n');
  const { stdout } = await promisify(execFile)('bash', ['-c', script], { maxBuffer: 1 << 20 });
  const lines = stdout.trim().split('\n');
  const times = lines.slice(-2);
  const children = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s/.exec(times[1] ?? '');
  const clientCpu = children ? Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4]) : NaN;
  return {
    transfers: lines.slice(0, -2).map((l) => {
      const [code, down, up, seconds, cache] = l.split(' ');
      return { code: Number(code), size: Math.max(Number(down), Number(up)), seconds: Number(seconds), cache: cache ?? '' };
    }),
    clientCpu,
  };
}

interface PathFigures {
  /** The suite's CPU seconds per GiB moved (idle use taken out). */
  cpuSPerGiB: number;
  mibps: number;
  /** The suite's processes' share, s/GiB (idle taken out). */
  byProcess: Record<string, number>;
  s3SPerGiB: number;
  clientSPerGiB: number;
  cache?: string[];
}

/** Runs the transfers and turns the CPU used meanwhile into figures per GiB. */
async function measure(
  argLists: string[][],
  expectSize: number,
  idleRate: Record<string, number>,
  references: Record<string, number>,
  counted: readonly string[],
): Promise<PathFigures & { seconds: number }> {
  const before = readCpu(references);
  const t0 = performance.now();
  const run = await curls(argLists);
  const seconds = (performance.now() - t0) / 1000;
  const used = diff(readCpu(references), before);
  // An upload sends a little more than the file (the multipart framing).
  for (const t of run.transfers) if (t.code !== 200 || t.size < expectSize) throw new Error(`transfer: ${t.code}, ${t.size} of ${expectSize} bytes`);
  const gib = (run.transfers.length * expectSize) / GiB;
  const byProcess: Record<string, number> = {};
  for (const name of counted) byProcess[name] = round(Math.max(0, (used[name] ?? 0) - (idleRate[name] ?? 0) * seconds) / gib, 3);
  return {
    cpuSPerGiB: round(
      Object.values(byProcess).reduce((a, b) => a + b, 0),
      3,
    ),
    mibps: round((gib * 1024) / seconds, 1),
    byProcess,
    s3SPerGiB: round((used.s3 ?? 0) / gib, 3),
    clientSPerGiB: round(run.clientCpu / gib, 3),
    ...(run.transfers.some((t) => t.cache) ? { cache: [...new Set(run.transfers.map((t) => t.cache))] } : {}),
    seconds,
  };
}

/** The bare Node reference: every request (any method, its path and query) piped to the same request on S3, and back. */
const BARE_NODE_PROXY = `
const http = require('node:http');
const target = new URL(process.env.TARGET);
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((req, res) => {
  const headers = { host: target.host };
  for (const h of ['content-length', 'content-type', 'range']) if (req.headers[h] !== undefined) headers[h] = req.headers[h];
  const upstream = http.request({ hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent }, (answer) => {
    const out = {};
    for (const h of ['content-length', 'content-type', 'etag', 'content-range']) if (answer.headers[h] !== undefined) out[h] = answer.headers[h];
    res.writeHead(answer.statusCode, out);
    answer.pipe(res);
  });
  req.pipe(upstream);
}).listen(0, '127.0.0.1', () => console.log(server.address().port));`;

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

interface Reference {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const stopper = (child: ChildProcess) => async () => {
  child.kill('SIGTERM');
  if (child.exitCode === null) await once(child, 'exit');
};

async function bareNodeProxy(): Promise<Reference> {
  const child = spawn(process.execPath, ['-e', BARE_NODE_PROXY], { env: { ...process.env, TARGET: BENCH_S3.endpoint }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  return { url: `http://127.0.0.1:${line.toString().trim()}`, pid: child.pid as number, stop: stopper(child) };
}

/**
 * nginx as a plain reverse proxy of S3: one worker (one transfer at a time), request bodies streamed (no spooling to
 * disk), answers through memory buffers and never a temporary file. The Host sent is S3's own (the presigned
 * signature covers it).
 */
async function nginxProxy(dir: string): Promise<Reference> {
  const port = await freePort();
  const s3 = new URL(BENCH_S3.endpoint);
  const conf = `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/client-body;
  proxy_temp_path ${dir}/proxy-temp;
  fastcgi_temp_path ${dir}/fastcgi-temp;
  uwsgi_temp_path ${dir}/uwsgi-temp;
  scgi_temp_path ${dir}/scgi-temp;
  upstream s3 { server ${s3.host}; keepalive 8; }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location / {
      proxy_pass http://s3;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host ${s3.host};
      proxy_request_buffering off;
      proxy_buffering on;
      proxy_buffer_size 64k;
      proxy_buffers 16 64k;
      proxy_busy_buffers_size 128k;
      proxy_max_temp_file_size 0;
    }
  }
}
`;
  await writeFile(path.join(dir, 'nginx.conf'), conf);
  const child = spawn('/usr/sbin/nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'inherit', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode} (${dir}/error.log)`);
    const ok = await fetch(`${url}/`).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (i > 100) throw new Error('nginx did not answer');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, pid: child.pid as number, stop: stopper(child) };
}

async function untilStored(jwt: string, id: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    const { body } = await api(jwt, 'GET', `/api/v1/assets/${id}/data`);
    if (body?.status === 'ERROR') throw new Error(`${id} ended ERROR`);
    if (body?.status && body.status !== 'NOT_READY') return;
    if (tries > 600) throw new Error(`${id} still NOT_READY`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function linkOf(jwt: string, id: string, query: string): Promise<string> {
  const res = await api(jwt, 'GET', `/api/v1/assets/${id}/get_link${query}`);
  if (res.status !== 200) throw new Error(`get_link ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.url as string;
}

/** The path and query of a URL (the references are asked for the same path on their own address). */
const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

async function main(): Promise<void> {
  const jwt = await login();
  const minio = benchMinio();
  const bytes = sizeMiB * MiB;
  const dir = await mkdtemp(path.join(tmpdir(), 'dam-byte-cpu-'));
  const file = path.join(dir, 'object.bin');
  let left = sizeMiB;
  await pipeline(
    new Readable({
      read() {
        this.push(left-- > 0 ? randomFillSync(Buffer.allocUnsafe(MiB)) : null);
      },
    }),
    createWriteStream(file),
  );
  const node = await bareNodeProxy();
  const nginx = await nginxProxy(dir);
  const refs = { bareNode: node.pid, nginx: nginx.pid };
  const ids: string[] = [];
  const refKeys: string[] = [];
  try {
    // What the suite's processes use when nothing passes through them (pollers, timers), per second.
    const idleBefore = readCpu({});
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const idleRate = Object.fromEntries(Object.entries(diff(readCpu({}), idleBefore)).map(([k, v]) => [k, v / IDLE_SECONDS]));
    const suite = [...SUITE, 'cdn-tier'];
    const auth = ['-H', `authorization: Bearer ${jwt}`];

    // Uploads: {upload} against a presigned PUT through each reference (the same key overwritten each time).
    const putKey = (name: string) => {
      const key = `bench/byte-cpu-${name}-${Date.now()}.bin`;
      refKeys.push(key);
      return key;
    };
    const putVia = async (base: string, key: string) => `${base}${pathOf(await minio.presignedPutObject(BUCKET, key, 3600))}`;
    const repeat = <T>(n: number, f: (i: number) => T) => Array.from({ length: n }, (_, i) => f(i));
    const nodePutUrl = await putVia(node.url, putKey('node'));
    const nginxPutUrl = await putVia(nginx.url, putKey('nginx'));
    const s3PutUrl = await putVia(BENCH_S3.endpoint, putKey('s3'));
    const putNode = await measure(
      repeat(transfers, () => ['-T', file, nodePutUrl]),
      bytes,
      idleRate,
      refs,
      ['bareNode'],
    );
    const putNginx = await measure(
      repeat(transfers, () => ['-T', file, nginxPutUrl]),
      bytes,
      idleRate,
      refs,
      ['nginx'],
    );
    const putS3 = await measure(
      repeat(transfers, () => ['-T', file, s3PutUrl]),
      bytes,
      idleRate,
      refs,
      [],
    );
    const answers = repeat(transfers, (i) => path.join(dir, `up-${i}.json`));
    const upload = await measure(
      answers.map((out) => [...auth, '-F', `file=@${file};filename=byte-cpu.bin`, '-o', out, `${UPLOAD}/api/v1/assets/new/content/original/upload`]),
      bytes,
      idleRate,
      refs,
      suite,
    );
    for (const out of answers) ids.push(((JSON.parse(await readFile(out, 'utf8')) as { files: Array<{ id: string }> }).files[0] as { id: string }).id);
    for (const id of ids) await untilStored(jwt, id);
    const first = ids[0] as string;

    // Downloads of the same object.
    const direct = await linkOf(jwt, first, '?link_type=object_storage&expiry=3600');
    const getNode = await measure(
      repeat(transfers, () => [`${node.url}${pathOf(direct)}`]),
      bytes,
      idleRate,
      refs,
      ['bareNode'],
    );
    const getNginx = await measure(
      repeat(transfers, () => [`${nginx.url}${pathOf(direct)}`]),
      bytes,
      idleRate,
      refs,
      ['nginx'],
    );
    const getS3 = await measure(
      repeat(transfers, () => [direct]),
      bytes,
      idleRate,
      refs,
      [],
    );
    const base = await measure(
      repeat(transfers, () => [...auth, `${BASE}/api/v1/assets/${first}/content/original/download`]),
      bytes,
      idleRate,
      refs,
      suite,
    );
    const cdnLinks = await Promise.all(ids.map((id) => linkOf(jwt, id, '?delivery=download&expiry=3600')));
    const edgeMiss = await measure(
      cdnLinks.map((l) => [`${EDGE}${pathOf(l)}`]),
      bytes,
      idleRate,
      refs,
      suite,
    );
    const edgeHit = await measure(
      repeat(transfers, () => [`${EDGE}${pathOf(cdnLinks[0] as string)}`]),
      bytes,
      idleRate,
      refs,
      suite,
    );
    const tierMiss = await measure([[`${CDN}${pathOf(cdnLinks[0] as string)}`]], bytes, idleRate, refs, suite);
    const tierHit = await measure(
      repeat(transfers, () => [`${CDN}${pathOf(cdnLinks[0] as string)}`]),
      bytes,
      idleRate,
      refs,
      suite,
    );

    const cheaper = (a: PathFigures, b: PathFigures) => Math.min(a.cpuSPerGiB, b.cpuSPerGiB);
    const putRef = cheaper(putNode, putNginx);
    const getRef = cheaper(getNode, getNginx);
    const strip = ({ seconds: _s, ...f }: PathFigures & { seconds: number }) => f;
    const withRatio = (f: PathFigures & { seconds: number }, ref: number) => ({ ...strip(f), ratio: round(f.cpuSPerGiB / ref) });
    console.log(
      JSON.stringify({
        sizeMiB,
        transfers,
        idleCpuPerSecond: Object.fromEntries(Object.entries(idleRate).map(([k, v]) => [k, round(v, 4)])),
        paths: {
          upload: withRatio(upload, putRef),
          base: withRatio(base, getRef),
          edgeMiss: withRatio(edgeMiss, getRef),
          edgeHit: withRatio(edgeHit, getRef),
          tierHit: withRatio(tierHit, getRef),
          tierMissOnce: withRatio(tierMiss, getRef),
        },
        references: {
          put: { bareNode: strip(putNode), nginx: strip(putNginx), s3Direct: strip(putS3) },
          get: { bareNode: strip(getNode), nginx: strip(getNginx), s3Direct: strip(getS3) },
        },
        target: 'each path within 1.2x of the cheaper reference',
      }),
    );
  } finally {
    await node.stop();
    await nginx.stop();
    for (const key of refKeys) await minio.removeObject(BUCKET, key).catch(() => undefined);
    for (const id of ids) await api(jwt, 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] });
    if (ids.length) await api(jwt, 'DELETE', '/api/v1/assets/trash/purge');
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
