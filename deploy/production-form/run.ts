/**
 * Starts (`up`) or stops (`down`) the production form on this machine (issue 31): the suite from its images with the
 * rendered dev overlay's configuration, behind Debian's nginx as the ingress. deploy/production-form/up and down run
 * this; the README section "The production form, run here" says what it is and what it is not.
 *
 *   node --import tsx deploy/production-form/run.ts up|down
 *
 * and, on a running form, what an operator does to a cluster (docs/operations.md "Rotation, one identity at a time"):
 *   run.ts get-secrets          the Secrets as `kubectl get secret -o yaml` prints them (a List, base64 data)
 *   run.ts apply-secrets < yaml `kubectl apply` of k8s:secrets' output: kept for later starts, and the NATS pods'
 *                               Secret volumes swapped as the kubelet does (their auth-reloader sidecars signal)
 *   run.ts restart <workload>   `kubectl rollout restart` (maxUnavailable 0): a new pod with the current Secrets at a
 *                               new address, ready, then the Service and the Ingress move to it, then the old one stops
 *
 * env: DAM_PF_DIR (default /tmp/dam-production-form: data, logs, certificates, state.json for the tests)
 *      DAM_PF_K8S_DIR (default <repo>/k8s: the k8s/ tree whose dev overlay is run, e.g. an older commit's)
 *      DAM_IMAGE_NAME (default localhost/dam: the images of deploy/image/build-local.sh, tags runtime and media)
 *      PODMAN_RUNTIME (default runc, as build-local.sh)
 *      DAM_PF_RECORD_FLOWS=0: no connection recording (by default every container records the connections it opens
 *      into DAM_PF_DIR/flows, for test/production-form/network-flows.test.ts; form.ts ADDITIONS)
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createTestCa, issueServerCertificate, type TestCa } from '../../libs/testing/src/tls-certs';
import { generateSecrets } from '../k8s/secrets';
import {
  ADDITIONS,
  buildForm,
  INFRA_ADDRESSES,
  natsNodeConf,
  natsSidecarCommand,
  natsVolumeDir,
  nginxConf,
  OVERRIDES,
  renderOverlay,
  ROOT,
  type Form,
  type Listeners,
} from './form';
import { DIR, IMAGE, LABEL, log, mountNatsSecrets, RECORD_FLOWS, SECRETS, sh, since, startPod, startProcess, STATE, until, httpOk, type State } from './host';
import { applySecrets, getSecrets, restart } from './operate';

export type { State } from './host';

const HTTPS_PORT = 443;
const SUBSCRIBER = 'subscriber-example';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A CA (made in `dir` unless given) and one server certificate for the DNS `names` (libs/testing's test PKI). */
async function certificates(dir: string, name: string, names: string[], ca?: TestCa) {
  mkdirSync(dir, { recursive: true });
  const authority = ca ?? (await createTestCa(dir));
  const { certFile, keyFile } = await issueServerCertificate(
    authority,
    dir,
    name,
    names.map((n) => `DNS:${n}`),
  );
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
  for (const stmt of form.postgresInitSql
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean))
    psql(stmt);
  // As a production database: the suite's user over TLS with its password only (the test clusters trust everyone);
  // the admin (postgres) stays on trust for this runner's own set-up from the host.
  writeFileSync(
    path.join(pgDir, 'data', 'pg_hba.conf'),
    `local all all trust\nhostssl all ${url.username} 127.0.0.1/32 scram-sha-256\nhost all postgres 127.0.0.1/32 trust\n`,
  );
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
    sh('radosgw-admin', [
      '-c',
      path.join(s3Dir, 'ceph.conf'),
      'subuser',
      'create',
      '--uid=local',
      `--subuser=local:${w.name}`,
      `--access=${w.name === 'link-signing' ? 'read' : 'full'}`,
      '--key-type=s3',
      `--access-key=${env.S3_ACCESS_KEY}`,
      `--secret=${env.S3_SECRET_KEY}`,
    ]);
  }
  // Path-style requests name the bucket in the path only when the Host is one of radosgw's own names; any other
  // name is taken for a virtual-hosted bucket. The names the suite signs for: `minio` (S3_ENDPOINT) and the public
  // host of the object_storage links (S3_PUBLIC_ENDPOINT, the dam-s3 Ingress). radosgw reads them at its start.
  const conf = path.join(s3Dir, 'ceph.conf');
  const zonegroup = JSON.parse(sh('radosgw-admin', ['-c', conf, 'zonegroup', 'get'])) as { hostnames: string[] };
  zonegroup.hostnames = [
    ...new Set(['localhost', 'minio', ...form.ingresses.filter((i) => i.routes.some((r) => r.service === 'minio')).flatMap((i) => i.hosts)]),
  ];
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
// Each node's pod volumes are host folders (form.ts natsVolumeDir), shared by the server and its sidecars as in the
// pod: the auth-reloader runs its rendered command beside each node, on the same auth.conf and pid file.
async function startNats(form: Form): Promise<State['pids']> {
  const pids: State['pids'] = { nats: [], natsSidecars: [] };
  for (let i = 0; i < form.natsReplicas; i++) {
    const dir = path.join(DIR, `nats-${i}`);
    for (const volume of new Set([...Object.values(form.natsMounts), ...form.natsSidecars.flatMap((s) => Object.values(s.mounts))]))
      mkdirSync(natsVolumeDir(dir, volume), { recursive: true });
    writeFileSync(path.join(dir, 'nats.conf'), natsNodeConf(form, i, dir));
    mountNatsSecrets(form, form.secrets, i);
    pids.nats.push(
      startProcess('nats-server', ['-c', path.join(dir, 'nats.conf')], path.join(dir, 'nats.log'), { ...process.env, POD_NAME: `nats-${i}`, ...form.natsEnv }),
    );
    for (const sidecar of form.natsSidecars) {
      const [cmd, ...args] = natsSidecarCommand(sidecar, dir);
      pids.natsSidecars.push(startProcess(cmd as string, args, path.join(dir, `${sidecar.name}.log`)));
    }
  }
  await Promise.all(
    INFRA_ADDRESSES.nats.slice(0, form.natsReplicas).map((a) => until(`NATS at ${a}`, 60_000, () => httpOk(`http://${a}:8222/healthz?js-enabled-only=true`))),
  );
  return pids;
}

async function startWorkloads(form: Form, caDir: string, timings: Record<string, number>, initFailures: Record<string, string>): Promise<string[]> {
  const containers: string[] = [];
  // The init containers (migrations) first, each workload's before its main container, all workloads at once.
  await Promise.all(
    form.workloads.map(async (w) => {
      const t = performance.now();
      const name = `pf-${w.name}`;
      await startPod(form, w, caDir, name, initFailures);
      containers.push(name);
      timings[`ready:${w.name}`] = since(t);
      log(`${w.name} ready in ${timings[`ready:${w.name}`]} ms`);
    }),
  );
  return containers;
}

async function up(): Promise<void> {
  if (existsSync(STATE)) throw new Error(`${STATE} exists: the production form runs already (deploy/production-form/down first)`);
  for (const tag of ['runtime', 'media']) {
    if (spawnSync('podman', ['image', 'exists', `${IMAGE}:${tag}`]).status !== 0)
      throw new Error(`${IMAGE}:${tag} is missing: deploy/image/build-local.sh first (DAM_IMAGE_NAME=${IMAGE})`);
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
  writeFileSync(SECRETS, JSON.stringify(Object.fromEntries(form.secrets), null, 1), { mode: 0o600 });
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
    dir: DIR,
    caFile: pki.ca.certFile,
    httpsPort: HTTPS_PORT,
    publicHosts: form.ingresses.flatMap((i) => i.hosts),
    adminEmail: form.secrets.get('dam-auth')?.ADMIN_EMAIL as string,
    adminPassword: form.secrets.get('dam-auth')?.ADMIN_PASSWORD as string,
    natsServers: INFRA_ADDRESSES.nats.map((a) => `nats://${a}:4222`),
    subscriber: SUBSCRIBER,
    subscriberSeed: form.secrets.get('dam-nats-operators')?.[`NATS_NKEY_SEED_${SUBSCRIBER.toUpperCase().replace(/-/g, '_')}`] as string,
    pids: { nats: [], natsSidecars: [] },
    restarts: 0,
    pgDir: path.join(DIR, 'postgres'),
    s3Dir: path.join(DIR, 's3'),
    containers: [],
    timings,
    initFailures: {},
    overrides: { ...OVERRIDES, ...(RECORD_FLOWS ? ADDITIONS : {}) },
  };
  const save = () => writeFileSync(STATE, JSON.stringify(state, null, 1), { mode: 0o600 });
  save();

  const t1 = performance.now();
  const [pg, s3, nats] = await Promise.all([startPostgres(form, pki), startS3(form), startNats(form)]);
  state.pids = nats;
  save();
  // Who listens where, for the readers of the recorded connections.
  const listeners: Listeners = { workloads: form.workloads.map((w) => ({ name: w.name, address: w.address, port: w.port })), s3: `127.0.0.1:${s3.port}` };
  writeFileSync(path.join(DIR, 'workloads.json'), JSON.stringify(listeners, null, 1));
  const nginxDir = path.join(DIR, 'nginx');
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(nginxDir, d), { recursive: true });
  sh('chown', ['-R', 'www-data:www-data', nginxDir]);
  state.nginx = { dir: nginxDir, certFile: pki.certFile, keyFile: pki.keyFile, httpsPort: HTTPS_PORT, pgPort: pg.port, s3Port: s3.port, pods: {} };
  writeFileSync(path.join(nginxDir, 'nginx.conf'), `user www-data;\n${nginxConf(form, state.nginx)}`);
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
  const ids = spawnSync('podman', ['ps', '-aq', '--filter', `label=${LABEL}`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean);
  if (ids.length > 0) spawnSync('podman', ['rm', '-f', '-t', '10', ...ids], { stdio: 'inherit' });
  const nginxConfFile = path.join(DIR, 'nginx', 'nginx.conf');
  if (existsSync(path.join(DIR, 'nginx', 'nginx.pid')))
    spawnSync('nginx', ['-s', 'stop', '-c', nginxConfFile, '-p', path.join(DIR, 'nginx')], { stdio: 'inherit' });
  // The cache tier's host nginx (host.ts startHostNginx), if this run had one.
  const tierDir = path.join(DIR, 'pf-cdn-cache');
  if (existsSync(path.join(tierDir, 'run', 'nginx.pid')))
    spawnSync('nginx', ['-s', 'stop', '-c', path.join(tierDir, 'nginx.conf'), '-p', tierDir], { stdio: 'inherit' });
  const signal = (pid: number) => {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone
    }
  };
  // The sidecars' groups: the shell and the sleep it waits on.
  for (const pid of state?.pids.natsSidecars ?? []) signal(-pid);
  for (const pid of state?.pids.nats ?? []) signal(pid);
  if (state) {
    spawnSync(path.join(ROOT, 'deploy/infra/postgres.sh'), ['stop', path.join(state.pgDir, 'data')], { stdio: 'inherit' });
    spawnSync(path.join(ROOT, 'deploy/infra/s3.sh'), ['stop', state.s3Dir], { stdio: 'inherit' });
  }
  rmSync(STATE, { force: true });
  // The logs stay for a look after a failed run; the generated credentials do not.
  for (const f of ['secrets.json', 'env']) rmSync(path.join(DIR, f), { recursive: true, force: true });
  log('down');
}

const fail = (what: string) => (e: unknown) => {
  console.error(`[production-form] ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
};
const cmd = process.argv[2];
if (cmd === 'up') up().catch(fail('up'));
else if (cmd === 'down') down();
else if (cmd === 'get-secrets') process.stdout.write(getSecrets());
else if (cmd === 'apply-secrets') {
  try {
    for (const name of applySecrets(readFileSync(0, 'utf8'))) console.log(`secret/${name} configured`);
  } catch (e) {
    fail('apply-secrets')(e);
  }
} else if (cmd === 'restart' && process.argv[3]) restart(process.argv[3]).catch(fail('restart'));
else {
  console.error('usage: run.ts up|down|get-secrets|apply-secrets|restart <workload>');
  process.exit(64);
}
