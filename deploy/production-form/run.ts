/**
 * Starts (`up`) or stops (`down`) the production form on this machine (issue 31): the suite from its images with the
 * rendered dev overlay's configuration, behind Debian's nginx as the ingress. deploy/production-form/up and down run
 * this; the README section "The production form, run here" says what it is and what it is not.
 *
 *   node --import tsx deploy/production-form/run.ts up|down
 *
 * env: DAM_PF_DIR (default /tmp/dam-production-form: data, logs, certificates, state.json for the tests)
 *      DAM_PF_K8S_DIR (default <repo>/k8s: the k8s/ tree whose dev overlay is run, e.g. an older commit's)
 *      DAM_IMAGE_NAME (default localhost/dam: the images of deploy/image/build-local.sh, tags runtime and media)
 *      PODMAN_RUNTIME (default runc, as build-local.sh)
 *      DAM_PF_RECORD_FLOWS=0: no connection recording (by default every container records the connections it opens
 *      into DAM_PF_DIR/flows, for test/production-form/network-flows.test.ts; form.ts ADDITIONS)
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createTestCa, issueServerCertificate, type TestCa } from '../../libs/testing/src/tls-certs';
import { generateSecrets } from '../k8s/secrets';
import { ADDITIONS, buildForm, INFRA_ADDRESSES, natsNodeConf, nginxConf, OVERRIDES, renderOverlay, ROOT, type Container, type Form, type Listeners, type Workload } from './form';

const DIR = process.env.DAM_PF_DIR ?? '/tmp/dam-production-form';
const IMAGE = process.env.DAM_IMAGE_NAME ?? 'localhost/dam';
const RUNTIME = process.env.PODMAN_RUNTIME ?? 'runc';
const HTTPS_PORT = 443;
const STATE = path.join(DIR, 'state.json');
const LABEL = 'dam-production-form=1';
const SUBSCRIBER = 'subscriber-example';
const RECORD_FLOWS = process.env.DAM_PF_RECORD_FLOWS !== '0';

export interface State {
  dir: string;
  caFile: string;
  httpsPort: number;
  publicHosts: string[];
  adminEmail: string;
  adminPassword: string;
  natsServers: string[];
  subscriber: string;
  subscriberSeed: string;
  pids: { nats: number[] };
  pgDir: string;
  s3Dir: string;
  containers: string[];
  timings: Record<string, number>;
  /** Init containers that failed (Kubernetes: Init:CrashLoopBackOff): name → the end of their output. */
  initFailures: Record<string, string>;
  overrides: Record<string, string>;
}

const log = (m: string) => console.log(`[production-form] ${m}`);
const sh = (cmd: string, args: string[], env?: NodeJS.ProcessEnv) => execFileSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
const since = (t: number) => Math.round(performance.now() - t);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function until(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) {
      if ((e as { fatal?: boolean }).fatal) throw e;
    }
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(250);
  }
}
const httpOk = async (url: string) => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;

/** A CA (made in `dir` unless given) and one server certificate for the DNS `names` (libs/testing's test PKI). */
async function certificates(dir: string, name: string, names: string[], ca?: TestCa) {
  mkdirSync(dir, { recursive: true });
  const authority = ca ?? (await createTestCa(dir));
  const { certFile, keyFile } = await issueServerCertificate(authority, dir, name, names.map((n) => `DNS:${n}`));
  return { ca: authority, certFile, keyFile };
}

// ---- PostgreSQL with TLS, as the overlay's URLs want it: host `postgres`, verify-full against the mounted CA ------
async function startPostgres(form: Form, pki: { ca: TestCa }): Promise<{ pgDir: string; port: number }> {
  const pgDir = path.join(DIR, 'postgres');
  mkdirSync(pgDir, { recursive: true });
  chmodSync(pgDir, 0o755);
  const port = await freePort();
  sh(path.join(ROOT, 'deploy/infra/postgres.sh'), ['start', path.join(pgDir, 'data'), String(port)]);
  const server = await certificates(path.join(pgDir, 'tls'), 'server', ['postgres'], pki.ca);
  for (const f of [server.certFile, server.keyFile]) sh('chown', ['postgres:postgres', f]);
  chmodSync(server.keyFile, 0o600);
  chmodSync(path.join(pgDir, 'tls'), 0o755);
  const psql = (sql: string, db = 'postgres') => sh('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-q', `postgres://postgres@127.0.0.1:${port}/${db}`, '-c', sql]);
  psql(`ALTER SYSTEM SET ssl_cert_file = '${server.certFile}'`);
  psql(`ALTER SYSTEM SET ssl_key_file = '${server.keyFile}'`);
  psql('ALTER SYSTEM SET ssl = on');
  psql('SELECT pg_reload_conf()');
  // The official image's entry point: POSTGRES_USER (a superuser) with POSTGRES_PASSWORD, then the init scripts.
  const url = new URL((form.secrets.get('dam-auth') as Record<string, string>).DATABASE_URL as string);
  psql(`CREATE ROLE ${url.username} LOGIN SUPERUSER PASSWORD '${decodeURIComponent(url.password)}'`);
  for (const stmt of form.postgresInitSql.split(';').map((s) => s.trim()).filter(Boolean)) psql(stmt);
  // As a production database: the suite's user over TLS with its password only (the test clusters trust everyone);
  // the admin (postgres) stays on trust for this runner's own set-up from the host.
  writeFileSync(path.join(pgDir, 'data', 'pg_hba.conf'), `local all all trust\nhostssl all ${url.username} 127.0.0.1/32 scram-sha-256\nhost all postgres 127.0.0.1/32 trust\n`);
  psql('SELECT pg_reload_conf()');
  return { pgDir, port };
}

// ---- The object store: radosgw (no MinIO image here), one S3 key pair per service as the Secrets give them -----
async function startS3(form: Form): Promise<{ s3Dir: string; port: number }> {
  const s3Dir = path.join(DIR, 's3');
  const port = await freePort();
  const root = form.secrets.get('dam-minio') as Record<string, string>;
  sh(path.join(ROOT, 'deploy/infra/s3.sh'), ['start', s3Dir, String(port)], {
    S3_ACCESS_KEY: root.MINIO_ROOT_USER,
    S3_SECRET_KEY: root.MINIO_ROOT_PASSWORD,
    S3_MON_PORT: String(await freePort()),
  });
  for (const w of form.workloads) {
    const env = w.main.env;
    if (!env.S3_ACCESS_KEY) continue;
    // The {cdn} edge reads only (as deploy/local); the others write the bucket (MinIO's per-service policies are not
    // enforced by radosgw: see the README's list of what this run does not cover).
    sh('radosgw-admin', ['-c', path.join(s3Dir, 'ceph.conf'), 'subuser', 'create', '--uid=local', `--subuser=local:${w.name}`,
      `--access=${w.name === 'link-signing' ? 'read' : 'full'}`, '--key-type=s3', `--access-key=${env.S3_ACCESS_KEY}`, `--secret=${env.S3_SECRET_KEY}`]);
  }
  // Path-style requests name the bucket in the path only when the Host is one of radosgw's own names; any other
  // name is taken for a virtual-hosted bucket. The names the suite signs for: `minio` (S3_ENDPOINT) and the public
  // host of the object_storage links (S3_PUBLIC_ENDPOINT, the dam-s3 Ingress). radosgw reads them at its start.
  const conf = path.join(s3Dir, 'ceph.conf');
  const zonegroup = JSON.parse(sh('radosgw-admin', ['-c', conf, 'zonegroup', 'get'])) as { hostnames: string[] };
  zonegroup.hostnames = [...new Set(['localhost', 'minio', ...form.ingresses.filter((i) => i.routes.some((r) => r.service === 'minio')).flatMap((i) => i.hosts)])];
  writeFileSync(path.join(s3Dir, 'zonegroup.json'), JSON.stringify(zonegroup));
  sh('radosgw-admin', ['-c', conf, 'zonegroup', 'set', '--infile', path.join(s3Dir, 'zonegroup.json')]);
  const pidFile = path.join(s3Dir, 'run', 'client.rgw.a.pid');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  process.kill(pid, 'SIGTERM');
  await until('radosgw stopped', 30_000, () => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  sh('radosgw', ['-c', conf, '-n', 'client.rgw.a', '--rgw_gc_obj_min_wait=60', '--rgw_gc_processor_period=60', '--rgw_gc_processor_max_time=60']);
  await until('radosgw restarted', 60_000, async () => (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) })).status < 500);
  return { s3Dir, port };
}

// ---- NATS: three nodes with the rendered nats.conf and the rendered auth.conf (Secret dam-nats-auth) ------------
async function startNats(form: Form): Promise<number[]> {
  const pids: number[] = [];
  for (let i = 0; i < form.natsReplicas; i++) {
    const dir = path.join(DIR, `nats-${i}`);
    mkdirSync(path.join(dir, 'auth'), { recursive: true });
    writeFileSync(path.join(dir, 'nats.conf'), natsNodeConf(form, i, dir));
    writeFileSync(path.join(dir, 'auth', 'auth.conf'), (form.secrets.get('dam-nats-auth') as Record<string, string>)['auth.conf'] as string, { mode: 0o600 });
    const out = path.join(dir, 'nats.log');
    const child = spawn('nats-server', ['-c', path.join(dir, 'nats.conf')], {
      detached: true,
      stdio: ['ignore', 'ignore', 'ignore'],
      env: { ...process.env, POD_NAME: `nats-${i}`, ...form.natsEnv },
    });
    child.unref();
    pids.push(child.pid as number);
    writeFileSync(out, '');
  }
  await Promise.all(
    INFRA_ADDRESSES.nats.slice(0, form.natsReplicas).map((a) => until(`NATS at ${a}`, 60_000, () => httpOk(`http://${a}:8222/healthz?js-enabled-only=true`))),
  );
  return pids;
}

// ---- The workloads, from the images --------------------------------------------------------------------------
const nofile = () => {
  const n = Number(sh('sh', ['-c', 'ulimit -Hn']).trim());
  return Number.isFinite(n) ? n : 1048576;
};

function podmanArgs(w: Workload, c: Container, form: Form, caDir: string, name: string, detached: boolean): string[] {
  const envFile = path.join(DIR, 'env', `${name}.env`);
  mkdirSync(path.dirname(envFile), { recursive: true, mode: 0o700 });
  for (const [k, v] of Object.entries(c.env)) if (v.includes('\n')) throw new Error(`${name}: ${k} holds a new line (podman's env files cannot)`);
  writeFileSync(envFile, Object.entries(c.env).map(([k, v]) => `${k}=${v}\n`).join(''), { mode: 0o600 });
  const n = nofile();
  return [
    '--runtime', RUNTIME, 'run', detached ? '-d' : '--rm', '--name', name, '--label', LABEL,
    '--ulimit', `nofile=${n}:${n}`, '--ulimit', 'nproc=32768:32768',
    '--network', 'host',
    ...Object.entries(form.hosts).flatMap(([h, a]) => ['--add-host', `${h}:${a}`]),
    '--user', `${w.user}:${w.group}`, '--group-add', String(w.fsGroup),
    ...(c.readOnlyRoot ? ['--read-only'] : []),
    ...(c.memoryLimit ? ['--memory', String(c.memoryLimit)] : []),
    ...(c.cpuLimit ? ['--cpus', String(c.cpuLimit)] : []),
    '--security-opt', 'no-new-privileges', '--cap-drop', 'ALL',
    // An emptyDir is writable by the pod's fsGroup. podman 4.3 ignores `mode=` on a tmpfs over a directory the image
    // has (the image's /var/cache/dam is 0700): `U` gives it to the container's user instead.
    ...Object.entries(c.tmpfs).flatMap(([p, bytes]) => ['--tmpfs', `${p}:rw,size=${bytes},U`]),
    ...(c.dbCa ? ['-v', `${caDir}:${c.dbCa}:ro`] : []),
    '--env-file', envFile,
    ...(RECORD_FLOWS
      ? ['-v', `${path.join(ROOT, 'deploy/local/record-flows.mjs')}:/dam-flows/record-flows.mjs:ro`, '-v', `${path.join(DIR, 'flows')}:/dam-flows/out`,
          '-e', 'NODE_OPTIONS=--import=/dam-flows/record-flows.mjs', '-e', 'DAM_RECORD_FLOWS=/dam-flows/out', '-e', `DAM_FLOW_SERVICE=${c.name === 'migrate' ? `migrate-${w.name}` : w.name}`]
      : []),
    c.image, ...c.args,
  ];
}

async function startWorkloads(form: Form, caDir: string, timings: Record<string, number>, initFailures: Record<string, string>): Promise<string[]> {
  const containers: string[] = [];
  // The init containers (migrations) first, each workload's before its main container, all workloads at once.
  await Promise.all(
    form.workloads.map(async (w) => {
      const t = performance.now();
      for (const c of w.init) {
        const name = `pf-${w.name}-${c.name}`;
        const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
          const p = spawn('podman', podmanArgs(w, c, form, caDir, name, false), { stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          p.stdout.on('data', (d) => (out += d));
          p.stderr.on('data', (d) => (out += d));
          p.on('close', (code) => resolve({ code, out }));
        });
        // Kubernetes would hold the pod in Init:CrashLoopBackOff: recorded (the tests hold a first install to no
        // failed init container), then the main container starts anyway so the rest of the run still says something.
        if (r.code !== 0) {
          initFailures[name] = r.out.trim().slice(-1000);
          log(`INIT CONTAINER FAILED: ${name} (exit ${r.code}): ${initFailures[name]}`);
        }
      }
      const name = `pf-${w.name}`;
      const r = spawnSync('podman', podmanArgs(w, w.main, form, caDir, name, true), { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`podman run ${name}: ${r.stderr}`);
      containers.push(name);
      await until(`${w.name} ready`, 240_000, async () => {
        if (spawnSync('podman', ['inspect', '-f', '{{.State.Running}}', name], { encoding: 'utf8' }).stdout.trim() !== 'true') {
          throw Object.assign(new Error(`${name} exited: ${spawnSync('podman', ['logs', '--tail', '20', name], { encoding: 'utf8' }).stderr.slice(-3000)}`), { fatal: true });
        }
        return httpOk(`http://${w.address}:${w.port}${w.readyPath}`);
      });
      timings[`ready:${w.name}`] = since(t);
      log(`${w.name} ready in ${timings[`ready:${w.name}`]} ms`);
    }),
  );
  return containers;
}

async function up(): Promise<void> {
  if (existsSync(STATE)) throw new Error(`${STATE} exists: the production form runs already (deploy/production-form/down first)`);
  for (const tag of ['runtime', 'media']) {
    if (spawnSync('podman', ['image', 'exists', `${IMAGE}:${tag}`]).status !== 0) throw new Error(`${IMAGE}:${tag} is missing: deploy/image/build-local.sh first (DAM_IMAGE_NAME=${IMAGE})`);
  }
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const timings: Record<string, number> = {};
  const t0 = performance.now();
  const objects = renderOverlay('dev');
  const secretObjects = generateSecrets({
    databaseUrl: `postgres://dam:${randomBytes(12).toString('hex')}@postgres:5432/{db}?sslmode=verify-full&sslrootcert=/etc/dam/db-ca/ca.crt`,
  });
  const form = buildForm(objects, secretObjects, IMAGE);
  writeFileSync(path.join(DIR, 'secrets.json'), JSON.stringify(Object.fromEntries(form.secrets), null, 1), { mode: 0o600 });
  timings.render = since(t0);

  const pki = await certificates(path.join(DIR, 'pki'), 'ingress', [...new Set(form.ingresses.flatMap((i) => i.hosts))]);
  // The CA as the Secret dam-db-ca mounts it (ca.crt), readable by the services' user.
  const caDir = path.join(DIR, 'db-ca');
  mkdirSync(caDir, { recursive: true });
  writeFileSync(path.join(caDir, 'ca.crt'), readFileSync(pki.ca.certFile), { mode: 0o644 });

  if (RECORD_FLOWS) {
    mkdirSync(path.join(DIR, 'flows'), { recursive: true });
    sh('chown', [`${form.workloads[0]?.user}:${form.workloads[0]?.group}`, path.join(DIR, 'flows')]);
  }

  const state: State = {
    dir: DIR, caFile: pki.ca.certFile, httpsPort: HTTPS_PORT, publicHosts: form.ingresses.flatMap((i) => i.hosts),
    adminEmail: form.secrets.get('dam-auth')?.ADMIN_EMAIL as string, adminPassword: form.secrets.get('dam-auth')?.ADMIN_PASSWORD as string,
    natsServers: INFRA_ADDRESSES.nats.map((a) => `nats://${a}:4222`), subscriber: SUBSCRIBER,
    subscriberSeed: form.secrets.get('dam-nats-operators')?.[`NATS_NKEY_SEED_${SUBSCRIBER.toUpperCase().replace(/-/g, '_')}`] as string,
    pids: { nats: [] }, pgDir: path.join(DIR, 'postgres'), s3Dir: path.join(DIR, 's3'), containers: [], timings, initFailures: {}, overrides: { ...OVERRIDES, ...(RECORD_FLOWS ? ADDITIONS : {}) },
  };
  const save = () => writeFileSync(STATE, JSON.stringify(state, null, 1), { mode: 0o600 });
  save();

  const t1 = performance.now();
  const [pg, s3, natsPids] = await Promise.all([startPostgres(form, pki), startS3(form), startNats(form)]);
  state.pids.nats = natsPids;
  save();
  // Who listens where, for the readers of the recorded connections.
  const listeners: Listeners = { workloads: form.workloads.map((w) => ({ name: w.name, address: w.address, port: w.port })), s3: `127.0.0.1:${s3.port}` };
  writeFileSync(path.join(DIR, 'workloads.json'), JSON.stringify(listeners, null, 1));
  const nginxDir = path.join(DIR, 'nginx');
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(nginxDir, d), { recursive: true });
  sh('chown', ['-R', 'www-data:www-data', nginxDir]);
  writeFileSync(path.join(nginxDir, 'nginx.conf'), `user www-data;\n${nginxConf(form, { dir: nginxDir, certFile: pki.certFile, keyFile: pki.keyFile, httpsPort: HTTPS_PORT, pgPort: pg.port, s3Port: s3.port })}`);
  sh('nginx', ['-t', '-q', '-c', path.join(nginxDir, 'nginx.conf'), '-p', nginxDir]);
  sh('nginx', ['-c', path.join(nginxDir, 'nginx.conf'), '-p', nginxDir]);
  timings.infra = since(t1);
  log(`infrastructure ready in ${timings.infra} ms (PostgreSQL with TLS, radosgw, NATS x${form.natsReplicas}, nginx)`);

  const t2 = performance.now();
  try {
    state.containers = await startWorkloads(form, caDir, timings, state.initFailures);
  } finally {
    state.containers = form.workloads.map((w) => `pf-${w.name}`);
    save();
  }
  timings.workloads = since(t2);
  timings.total = since(t0);
  save();
  log(`${form.workloads.length} workloads ready in ${timings.workloads} ms; the whole suite in ${timings.total} ms`);
  log(`state: ${STATE}; front door: https://${state.publicHosts[0]} (resolve to 127.0.0.1, CA ${state.caFile})`);
}

function down(): void {
  const state: State | undefined = existsSync(STATE) ? JSON.parse(readFileSync(STATE, 'utf8')) : undefined;
  const ids = spawnSync('podman', ['ps', '-aq', '--filter', `label=${LABEL}`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  if (ids.length > 0) spawnSync('podman', ['rm', '-f', '-t', '10', ...ids], { stdio: 'inherit' });
  const nginxConfFile = path.join(DIR, 'nginx', 'nginx.conf');
  if (existsSync(path.join(DIR, 'nginx', 'nginx.pid'))) spawnSync('nginx', ['-s', 'stop', '-c', nginxConfFile, '-p', path.join(DIR, 'nginx')], { stdio: 'inherit' });
  for (const pid of state?.pids.nats ?? []) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  if (state) {
    spawnSync(path.join(ROOT, 'deploy/infra/postgres.sh'), ['stop', path.join(state.pgDir, 'data')], { stdio: 'inherit' });
    spawnSync(path.join(ROOT, 'deploy/infra/s3.sh'), ['stop', state.s3Dir], { stdio: 'inherit' });
  }
  rmSync(STATE, { force: true });
  // The logs stay for a look after a failed run; the generated credentials do not.
  for (const f of ['secrets.json', 'env']) rmSync(path.join(DIR, f), { recursive: true, force: true });
  log('down');
}

const cmd = process.argv[2];
if (cmd === 'up') {
  up().catch((e: unknown) => {
    console.error(`[production-form] up failed: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
} else if (cmd === 'down') down();
else {
  console.error('usage: run.ts up|down');
  process.exit(64);
}
