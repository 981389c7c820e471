/**
 * The image runs compiled JavaScript on the pinned Node 24, not TypeScript through a loader (issue 31, "a supported
 * runtime"). This file compiles every service as the Dockerfile does (deploy/image/build-js.mjs), then runs the
 * output through the image's own entry point (deploy/image/run-service, APP_DIR = this checkout) on plain node:
 * every service loads its whole module graph from dist/; `migrate auth` applies auth's migrations (the init
 * containers' entry) against a real PostgreSQL; auth and the gateway start from their bundles against PostgreSQL and
 * NATS, answer /healthz and /readyz, serve the files read next to their sources (auth's migrations, the gateway's
 * docs/openapi.yaml) and a login through the gateway. It also holds the Dockerfile to the pinned base and the
 * compile step. deploy/image/build-local.sh does the same inside the built images.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPool } from '../../libs/db/src';
import { createDatabase } from '../../libs/testing/src/database';
import { freePort } from '../../libs/testing/src/free-port';
import { startNats, type TestNats } from '../../libs/testing/src/nats-server';
import { startPostgresCluster, type PostgresCluster } from '../../libs/testing/src/postgres-cluster';
import { serviceIdentities } from '../../libs/testing/src/service-identities';
import { scaled } from '../../libs/testing/src/time-scale';

jest.setTimeout(scaled(120_000));

const ROOT = path.resolve(__dirname, '..', '..');
const RUN_SERVICE = path.join(ROOT, 'deploy', 'image', 'run-service');
const run = promisify(execFile);
const SERVICES = readdirSync(path.join(ROOT, 'services'))
  .filter((name) => existsSync(path.join(ROOT, 'services', name, 'src', 'main.ts')))
  .sort();

/** The environment the image's entry point runs with: this checkout as /app, the node running jest first on PATH. */
function imageEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR };
  return { ...env, APP_DIR: ROOT, OTEL_SDK_DISABLED: 'true', LOG_LEVEL: 'info', ...extra };
}

/** `run-service <args>` to its exit: exit code and output. */
async function runService(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(RUN_SERVICE, args, { env: imageEnv(env), timeout: scaled(60_000) });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

interface Started {
  child: ChildProcess;
  url: string;
  lines: string[];
  exited: Promise<number | null>;
  /** ms from spawn to the first 200 of `path`. */
  readyMs: number;
}
const started: ChildProcess[] = [];

/** `run-service <service>` in the background: its output's lines as they come (each also to `onLine`), and its exit. */
function spawnService(service: string, env: Record<string, string>, onLine: (line: string) => void = () => undefined) {
  const child = spawn(RUN_SERVICE, [service], { env: imageEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      lines.push(l);
      onLine(l);
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

/** `run-service <service>` in the background on a free port, until `path` answers 200. */
async function startService(service: string, readyPath: string, env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const t0 = Date.now();
  const { child, lines, exited } = spawnService(service, { HOST: '127.0.0.1', PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + scaled(30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${service} exited (${child.exitCode}) before ${readyPath} answered:\n${lines.slice(-20).join('\n')}`);
    const ok = await fetch(`${url}${readyPath}`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, url, lines, exited, readyMs: Date.now() - t0 };
    if (Date.now() > deadline) throw new Error(`${service}: ${readyPath} did not answer 200:\n${lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `run-service <service>` in the background until a line of its output matches `line`. */
async function startUntilLine(service: string, line: RegExp, env: Record<string, string>): Promise<ChildProcess> {
  let seenLine!: () => void;
  const seen = new Promise<void>((resolve) => (seenLine = resolve));
  const { child, lines, exited } = spawnService(service, env, (l) => line.test(l) && seenLine());
  const gone = exited.then((code) => Promise.reject(new Error(`${service} exited (${code}):\n${lines.join('\n')}`)));
  const late = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`${service}: no line ${line}:\n${lines.join('\n')}`)), scaled(30_000)).unref(),
  );
  await Promise.race([seen, gone, late]);
  return child;
}

/** The command line of a running process (the entry point execs node: the pid is node's). */
const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

describe('the image runs compiled JavaScript', () => {
  let pg: PostgresCluster;
  let nats: TestNats;

  beforeAll(async () => {
    // What the Dockerfile's build stage runs; the infrastructure starts meanwhile.
    const [, pgStarted, natsStarted] = await Promise.all([
      run(process.execPath, [path.join(ROOT, 'deploy', 'image', 'build-js.mjs')], { cwd: '/', timeout: scaled(60_000) }),
      startPostgresCluster(),
      startNats(),
    ]);
    pg = pgStarted;
    nats = natsStarted;
  });

  afterAll(async () => {
    for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.allSettled([pg?.stop(), nats?.stop()]);
  });

  it('the Dockerfile compiles the services and runs on the pinned Node 24 base, without tsx', () => {
    const pinned = /^DAM_NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(ROOT, 'deploy', 'infra', 'node-env.sh'), 'utf8'))?.[1];
    expect(pinned).toMatch(/^24\.\d+\.\d+$/);
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${String(pinned).replace(/\./g, '\\.')}-bookworm-slim$`, 'm'));
    expect(dockerfile).toMatch(/^RUN node deploy\/image\/build-js\.mjs$/m);
    // Neither the entry point nor the pruning step bring a TypeScript loader into the image.
    expect(readFileSync(RUN_SERVICE, 'utf8')).not.toMatch(/tsx/);
    expect(readFileSync(path.join(ROOT, 'deploy', 'image', 'prune-prod.sh'), 'utf8')).toMatch(/^keep=\$\{KEEP_PACKAGES:-\}$/m);
  });

  it('every service has a bundle, and every bundle loads its whole module graph from dist/ up to the configuration check', async () => {
    for (const s of SERVICES) expect(existsSync(path.join(ROOT, 'services', s, 'dist', 'main.js'))).toBe(true);
    // Without their variables the services stop at the configuration check, which runs after every import
    // resolved (third-party packages from node_modules, files next to the sources). Two at a time: 2 cores.
    const results: Array<{ service: string; code: number; out: string }> = [];
    const queue = [...SERVICES];
    await Promise.all(
      [0, 1].map(async () => {
        for (let s = queue.shift(); s !== undefined; s = queue.shift()) results.push({ service: s, ...(await runService([s])) });
      }),
    );
    for (const r of results) {
      expect({ service: r.service, code: r.code, first: r.out.split('\n')[0] }).toEqual({ service: r.service, code: 1, first: 'Invalid configuration:' });
    }
  });

  it('refuses unknown services, and names the tasks (search replay)', async () => {
    expect(await runService(['nope'])).toEqual({ code: 64, out: expect.stringContaining("unknown service 'nope'") as string });
    expect(await runService(['task', 'search', 'nope'])).toEqual({ code: 64, out: expect.stringContaining('(tasks: replay)') as string });
    expect(await runService(['auth'], { DAM_SEMI_SPACE_MB: '16M' })).toEqual({ code: 64, out: expect.stringContaining('DAM_SEMI_SPACE_MB must be') as string });
    const replay = await runService(['task', 'search', 'replay']);
    expect(replay).toEqual({ code: 1, out: expect.stringMatching(/^Invalid configuration:/) as string });
  });

  it("the init containers' migrate leaves every database as its service migrates it (metadata's outbox table included)", async () => {
    const owners = SERVICES.filter((s) => existsSync(path.join(ROOT, 'services', s, 'src', 'migrations')));
    expect(owners).toEqual(expect.arrayContaining(['auth', 'metadata', 'search', 'webhook', 'addon']));
    for (const service of owners) {
      const db = await createDatabase(`image_migrate_${service.replace(/-/g, '_')}`, pg.url);
      // Before: metadata's failed on an empty database at 015_schemas_announced.sql ("relation outbox does not exist").
      const run = await runService(['migrate', service], { DATABASE_URL: db });
      expect({ service, code: run.code, out: run.code === 0 ? 'ok' : run.out }).toEqual({ service, code: 0, out: 'ok' });
      // What the service applies at start finds nothing left to do.
      const own = path.join(ROOT, 'services', service, 'src', 'migrations.ts');
      if (!existsSync(own)) continue;
      const module = (await import(own)) as Record<string, (pool: unknown) => Promise<string[]>>;
      const migrateOwn = Object.entries(module).find(([name]) => /^migrate[A-Z]/.test(name))?.[1];
      const pool = createPool(db);
      try {
        expect({ service, left: await migrateOwn?.(pool) }).toEqual({ service, left: [] });
      } finally {
        await pool.end();
      }
    }
  });

  it("conversion sizes libuv's pool before anything starts it: a thread per job and per transform slot, two for files", async () => {
    // sharp works on that pool; at libuv's own 4 (CONCURRENCY's default), four jobs' encodes held every thread and
    // transforms waited behind them. The pool starts at the first file read, so this must come first in the bundle.
    const identities = serviceIdentities();
    const env = { ...identities.env('conversion'), ...nats.env('conversion'), S3_ACCESS_KEY: 'unused', S3_SECRET_KEY: 'unused' };
    for (const [extra, threads] of [
      [{}, 8],
      [{ CONCURRENCY: '3', TRANSFORM_CONCURRENCY: '1' }, 6],
      [{ UV_THREADPOOL_SIZE: '5' }, 5],
    ] as const) {
      // No DAM_INTERNAL stream in this NATS: conversion stays at its wait for the streams, the pool long started.
      const child = await startUntilLine('conversion', /waiting for streams/, { ...env, ...extra });
      const pid = child.pid ?? -1;
      const names = readdirSync(`/proc/${pid}/task`).map((t) => readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim());
      expect({ extra, workers: names.filter((n) => n === 'libuv-worker').length }).toEqual({ extra, workers: threads });
      child.kill('SIGKILL');
    }
  });

  it('migrate, auth and the gateway run from their bundles against PostgreSQL and NATS', async () => {
    const db = await createDatabase('image_auth', pg.url);
    const first = await runService(['migrate', 'auth'], { DATABASE_URL: db });
    expect(first.code).toBe(0);
    // Auth's migrations are read from services/auth/src/migrations, next to the sources.
    expect(JSON.parse(first.out) as unknown).toMatchObject({
      service: 'auth',
      msg: 'migrations applied',
      applied: expect.arrayContaining([expect.stringMatching(/\.sql$/)]) as unknown,
    });
    expect(JSON.parse((await runService(['migrate', 'auth'], { DATABASE_URL: db })).out) as unknown).toMatchObject({ applied: [], msg: 'schema up to date' });

    const identities = serviceIdentities();
    const JWT_SECRET = 'image-test-jwt-secret-0123456789';
    const auth = await startService('auth', '/readyz', { DATABASE_URL: db, JWT_SECRET, ...identities.env('auth'), NODE_ENV: 'development' });
    const gateway = await startService('gateway', '/healthz', { JWT_SECRET, ...identities.env('gateway'), ...nats.env('gateway'), AUTH_URL: auth.url });
    for (const s of [auth, gateway]) {
      // node itself, on the compiled bundle: run-service exec'd it, with no loader, and with the young generation's
      // ceiling (DAM_SEMI_SPACE_MB, 16 by default).
      const argv = cmdline(s.child.pid ?? -1);
      expect(argv.join(' ')).toMatch(/^\S*node --enable-source-maps --max-semi-space-size=16 services\/(auth|gateway)\/dist\/main\.js$/);
      expect(argv.join(' ')).not.toMatch(/tsx|--import|--loader|\.ts\b/);
    }
    expect((await fetch(`${auth.url}/healthz`)).status).toBe(200);
    // docs/openapi.yaml, read by the gateway relative to its source folder.
    const openapi = await fetch(`${gateway.url}/api/v1/openapi.yaml`);
    expect(openapi.status).toBe(200);
    expect(await openapi.text()).toMatch(/^openapi: 3\./m);
    const login = await fetch(`${gateway.url}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password' }),
    });
    const answer = (await login.json()) as { jwt?: string };
    expect({ status: login.status, answer }).toEqual({
      status: 200,
      answer: expect.objectContaining({ jwt: expect.stringMatching(/^ey/) as string }) as unknown,
    });
    console.log(`from spawn to ready (compiled JS): auth /readyz ${auth.readyMs} ms, gateway /healthz ${gateway.readyMs} ms`);

    // SIGTERM reaches node (no shell in between): both drain and exit 0.
    for (const s of [gateway, auth]) {
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });
});
