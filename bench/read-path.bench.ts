/**
 * The read path's cost (issue 33): Get Data through {base} against the gateway's bare /healthz, at the same number
 * of connections in the same run, and the metadata hop alone (the same Get Data sent straight to metadata with a
 * token signed as the gateway signs it, and metadata's own /healthz). Prints one JSON line.
 *   RATE_LIMIT_PER_MINUTE=0 RATE_LIMIT_ADDRESS_PER_MINUTE=0 deploy/local/up
 *   pnpm exec tsx bench/read-path.bench.ts [connections=32] [seconds=10] [rounds=2]
 * The client is Node's fetch, as in delivery.bench (the figures of issue 33 come from it); `CLIENT=http` uses node:http,
 * which costs the client about half as much CPU per request: /healthz then runs at about twice the rate and the ratio
 * is lower for the same server cost (on 2 cores the client and the servers share the machine).
 * Get Data is asked twice: as clients ask it (a repeated read of one asset, answered by the gateway's read cache
 * after the first: issue 33's figure), and with `Cache-Control: no-cache` (`getDataFresh`: metadata asked every time,
 * both hops, the cost before the cache and of every first read).
 * Each phase: requests/s, p50/p99 (ms), errors, and the CPU milliseconds per request of gateway, metadata, auth,
 * PostgreSQL, nats-server and the bench itself during it (where a request's time goes). The phases alternate `rounds` times and the best round of each
 * counts: other work on the machine (2 cores, other people's tests) hits one round, not every one. The ratio of Get
 * Data's rate to /healthz's is the figure that counts (target ≥ 0.33, p99 < 50 ms); the load average says how busy
 * the machine was. PHASES=getData (any of healthz, getData, getDataFresh, metadataHealthz, metadataGetData) runs only those: to
 * profile one (deploy/local/up with DAM_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR", DAM_SERVICES="gateway metadata").
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { createServiceSigner, parseSigningKey, principalFromJwt } from '../libs/auth-tokens/src';
import { BASE, DATA, api, cpuSeconds, infraPids, login, percentile, servicePid, treeCpuSeconds, uploadFiles } from './support';

const connections = Number(process.argv[2] ?? 32);
const seconds = Number(process.argv[3] ?? 10);
const rounds = Number(process.argv[4] ?? 2);
const client = process.env.CLIENT === 'http' ? 'http' : 'fetch';
/** PHASES=getData (comma-separated) runs only those phases: for a profile of one of them. */
const only = new Set((process.env.PHASES ?? 'healthz,getData,getDataFresh,metadataHealthz,metadataGetData').split(','));
const METADATA = process.env.METADATA_URL ?? 'http://127.0.0.1:8091';

interface Phase {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU milliseconds per request of each process during the phase. */
  cpuMsPerRequest: Record<string, number>;
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/** What each process used, from now until the returned function is called (seconds). */
function meter(): () => Record<string, number> {
  const pids: Record<string, number> = { gateway: servicePid('gateway'), metadata: servicePid('metadata'), auth: servicePid('auth') };
  const { postgres: pg, nats } = infraPids();
  const read = () => ({
    ...Object.fromEntries(Object.entries(pids).map(([s, p]) => [s, cpuSeconds(p)])),
    ...(pg ? { postgres: treeCpuSeconds(pg) } : {}),
    ...(nats ? { nats: cpuSeconds(nats) } : {}),
    bench: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
  });
  const before = read();
  return () => {
    const after = read();
    return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k as keyof typeof before] ?? 0)]));
  };
}

/**
 * `connections` loops of GET `url` for `forSeconds`, each on a kept-alive connection of its own. */
async function rate(url: string, headers: () => Record<string, string>, forSeconds: number): Promise<Phase> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const times: number[] = [];
  let errors = 0;
  const stop = meter();
  const end = performance.now() + forSeconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          if (client === 'http') {
            if ((await get(url, headers(), agent)).status !== 200) errors += 1;
          } else {
            const res = await fetch(url, { headers: headers() });
            await res.arrayBuffer();
            if (res.status !== 200) errors += 1;
          }
        } catch {
          errors += 1;
        }
        times.push(performance.now() - t0);
      }
    }),
  );
  const cpu = stop();
  agent.destroy();
  return {
    rps: Math.round(times.length / forSeconds),
    p50: round1(percentile(times, 50)),
    p99: round1(percentile(times, 99)),
    errors,
    cpuMsPerRequest: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Math.round(((v * 1000) / Math.max(1, times.length)) * 100) / 100])),
  };
}

/** One GET, its body read and dropped. */
function get(url: string, headers: Record<string, string>, agent?: http.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, ...(agent ? { agent } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const best = (phases: Phase[]): Phase | undefined => (phases.length ? phases.reduce((a, b) => (b.rps > a.rps ? b : a)) : undefined);
const ratio = (a?: Phase, b?: Phase) => (a && b ? Math.round((a.rps / b.rps) * 100) / 100 : undefined);

async function main(): Promise<void> {
  const jwt = await login();
  const auth = { authorization: `Bearer ${jwt}` };
  const [id] = await uploadFiles(jwt, [{ bytes: Buffer.from('read path bench\n'), name: 'read-path.txt' }]);
  if (!id) throw new Error('upload returned no asset');
  for (let d = await api(jwt, 'GET', `/api/v1/assets/${id}/data`); d.body?.status !== 'OK'; d = await api(jwt, 'GET', `/api/v1/assets/${id}/data`)) {
    if (d.status !== 200 || d.body?.status === 'ERROR') throw new Error(`asset ${id}: ${d.status} ${JSON.stringify(d.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const dataPath = `/api/v1/assets/${id}/data`;

  // The metadata hop alone: the request the gateway forwards, with a token signed by the gateway's key for each one
  // (a token is single-use). The bench signs them, so its own CPU per request is higher here than in the others.
  const keys = JSON.parse(readFileSync(path.join(DATA, 'secrets', 'service-keys.json'), 'utf8')) as {
    services: Record<string, { active: string; keys: Record<string, unknown> }>;
  };
  const gw = keys.services.gateway;
  if (!gw) throw new Error('no gateway key in service-keys.json');
  const signer = createServiceSigner(parseSigningKey(JSON.stringify(gw.keys[gw.active]), 'gateway'));
  const { token_epoch: _epoch, ...principal } = principalFromJwt(jwt, readJwtSecret());
  const direct = () => ({
    ...signer.headers({ audience: 'metadata', method: 'GET', path: dataPath, principal, clientAddress: '127.0.0.1', body: '' }),
    'x-forwarded-for': '127.0.0.1',
  });
  const check = await get(`${METADATA}${dataPath}`, direct());
  if (check.status !== 200) throw new Error(`metadata directly answered ${check.status}: ${check.body}`);

  // Warm-up: JIT, connection pools, the user's status cache.
  await rate(`${BASE}${dataPath}`, () => auth, 2);

  const runs: Record<'healthz' | 'getData' | 'getDataFresh' | 'metadataHealthz' | 'metadataGetData', Phase[]> = {
    healthz: [],
    getData: [],
    getDataFresh: [],
    metadataHealthz: [],
    metadataGetData: [],
  };
  const load = [loadavg()[0] ?? 0];
  const phases = {
    healthz: () => rate(`${BASE}/healthz`, () => ({}), seconds),
    getData: () => rate(`${BASE}${dataPath}`, () => auth, seconds),
    // The same read with `Cache-Control: no-cache`: past the gateway's cache to metadata every time (both hops).
    getDataFresh: () => rate(`${BASE}${dataPath}`, () => ({ ...auth, 'cache-control': 'no-cache' }), seconds),
    metadataHealthz: () => rate(`${METADATA}/healthz`, () => ({}), seconds),
    metadataGetData: () => rate(`${METADATA}${dataPath}`, direct, seconds),
  };
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(phases)) if (only.has(name)) runs[name as keyof typeof phases].push(await run());
    load.push(loadavg()[0] ?? 0);
  }
  const ratioOf = (a: Phase[], b: Phase[]) => a.map((x, i) => Math.round((x.rps / (b[i]?.rps ?? 1)) * 100) / 100);

  await api(jwt, 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] });
  await api(jwt, 'DELETE', '/api/v1/assets/trash/purge');

  const gateway = { healthz: best(runs.healthz), getData: best(runs.getData), getDataFresh: best(runs.getDataFresh) };
  const metadata = { healthz: best(runs.metadataHealthz), getData: best(runs.metadataGetData) };
  console.log(
    JSON.stringify({
      client,
      connections,
      seconds,
      rounds,
      loadAverage: load.map(round1),
      gateway: {
        ...gateway,
        ratio: ratio(gateway.getData, gateway.healthz),
        ratioPerRound: ratioOf(runs.getData, runs.healthz),
        ratioFresh: ratio(gateway.getDataFresh, gateway.healthz),
      },
      metadataDirect: {
        ...metadata,
        ratio: ratio(metadata.getData, metadata.healthz),
        ratioPerRound: ratioOf(runs.metadataGetData, runs.metadataHealthz),
      },
      target: { ratio: 0.33, p99Ms: 50 },
    }),
  );
}

/** The JWT secret deploy/local generated (to read the principal out of the admin's token as the gateway does). */
function readJwtSecret(): string {
  if (process.env.JWT_SECRET) return process.env.JWT_SECRET;
  const line = readFileSync(path.join(DATA, 'secrets.env'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('JWT_SECRET='));
  if (!line) throw new Error('JWT_SECRET is not set and not in .data/secrets.env');
  return line.slice('JWT_SECRET='.length).replace(/^'|'$/g, '');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
