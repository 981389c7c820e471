/**
 * The production form's pieces on this host (issue 31), shared by run.ts (up, down) and operate.ts (what an operator
 * does to the running form): where it keeps its state, a pod's containers under podman, a Secret volume as the
 * kubelet keeps it, a NATS pod's container as a host process.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { renderCdnCacheConfig } from '../cache/nginx-cdn';
import { natsVolumeDir, ROOT, type Container, type Form, type NginxOptions, type Workload } from './form';

export const DIR = process.env.DAM_PF_DIR ?? '/tmp/dam-production-form';
export const IMAGE = process.env.DAM_IMAGE_NAME ?? 'localhost/dam';
export const RUNTIME = process.env.PODMAN_RUNTIME ?? 'runc';
export const STATE = path.join(DIR, 'state.json');
export const SECRETS = path.join(DIR, 'secrets.json');
export const LABEL = 'dam-production-form=1';
export const RECORD_FLOWS = process.env.DAM_PF_RECORD_FLOWS !== '0';

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
  /** nats: the servers; natsSidecars: each node's sidecars (auth-reloader), each the leader of its process group. */
  pids: { nats: number[]; natsSidecars: number[] };
  /** What nginx.conf is made from again when a restarted workload's pod moves (nginxConf). */
  nginx?: NginxOptions;
  /** Pods started by `restart` so far (each gets a new address, 127.0.1.<200 + n>). */
  restarts: number;
  pgDir: string;
  s3Dir: string;
  containers: string[];
  timings: Record<string, number>;
  /** Init containers that failed (Kubernetes: Init:CrashLoopBackOff): name → the end of their output. */
  initFailures: Record<string, string>;
  overrides: Record<string, string>;
}

export const log = (m: string) => console.log(`[production-form] ${m}`);
export const sh = (cmd: string, args: string[], env?: NodeJS.ProcessEnv) =>
  execFileSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
export const since = (t: number) => Math.round(performance.now() - t);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
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
export const httpOk = async (url: string) => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;

/**
 * A Secret volume as the kubelet keeps it: each key a link `<key>` → `..data/<key>`, `..data` a link to a folder of
 * this version, replaced in one rename (a reader never sees half a file); the folder of the version before goes.
 */
export function mountSecret(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const data = path.join(dir, '..data');
  const before = existsSync(data) ? readlinkSync(data) : undefined;
  const version = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${randomBytes(4).toString('hex')}`;
  mkdirSync(path.join(dir, version));
  for (const [key, value] of Object.entries(files)) writeFileSync(path.join(dir, version, key), value, { mode: 0o600 });
  symlinkSync(version, path.join(dir, '..data_tmp'));
  renameSync(path.join(dir, '..data_tmp'), data);
  for (const key of Object.keys(files)) {
    try {
      lstatSync(path.join(dir, key));
    } catch {
      symlinkSync(path.join('..data', key), path.join(dir, key));
    }
  }
  if (before) rmSync(path.join(dir, before), { recursive: true, force: true });
}

/** Node i's Secret volumes (dam-nats-auth), from the Secrets as they are now. */
export function mountNatsSecrets(form: Form, secrets: ReadonlyMap<string, Record<string, string>>, i: number): void {
  for (const [volume, secretName] of Object.entries(form.natsSecretVolumes)) {
    const files = secrets.get(secretName);
    if (!files) throw new Error(`the NATS pods mount the Secret ${secretName}, which deploy/k8s/secrets.ts does not make`);
    mountSecret(natsVolumeDir(path.join(DIR, `nats-${i}`), volume), files);
  }
}

/** A process of its own (group) whose output goes to `log`: a pod's container. */
export function startProcess(cmd: string, args: string[], log: string, env: NodeJS.ProcessEnv = process.env): number {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd], env });
    child.unref();
    return child.pid as number;
  } finally {
    closeSync(fd);
  }
}

// ---- The workloads, from the images --------------------------------------------------------------------------
export const nofile = () => {
  const n = Number(sh('sh', ['-c', 'ulimit -Hn']).trim());
  return Number.isFinite(n) ? n : 1048576;
};

export function podmanArgs(w: Workload, c: Container, form: Form, caDir: string, name: string, detached: boolean): string[] {
  const envFile = path.join(DIR, 'env', `${name}.env`);
  mkdirSync(path.dirname(envFile), { recursive: true, mode: 0o700 });
  for (const [k, v] of Object.entries(c.env)) if (v.includes('\n')) throw new Error(`${name}: ${k} holds a new line (podman's env files cannot)`);
  writeFileSync(
    envFile,
    Object.entries(c.env)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  const n = nofile();
  return [
    '--runtime',
    RUNTIME,
    'run',
    detached ? '-d' : '--rm',
    '--name',
    name,
    '--label',
    LABEL,
    '--ulimit',
    `nofile=${n}:${n}`,
    '--ulimit',
    'nproc=32768:32768',
    '--network',
    'host',
    ...Object.entries(form.hosts).flatMap(([h, a]) => ['--add-host', `${h}:${a}`]),
    '--user',
    `${w.user}:${w.group}`,
    '--group-add',
    String(w.fsGroup),
    ...(c.readOnlyRoot ? ['--read-only'] : []),
    ...(c.memoryLimit ? ['--memory', String(c.memoryLimit)] : []),
    ...(c.cpuLimit ? ['--cpus', String(c.cpuLimit)] : []),
    '--security-opt',
    'no-new-privileges',
    '--cap-drop',
    'ALL',
    // An emptyDir is writable by the pod's fsGroup. podman 4.3 ignores `mode=` on a tmpfs over a directory the image
    // has (the image's /var/cache/dam is 0700): `U` gives it to the container's user instead.
    ...Object.entries(c.tmpfs).flatMap(([p, bytes]) => ['--tmpfs', `${p}:rw,size=${bytes},U`]),
    ...(c.dbCa ? ['-v', `${caDir}:${c.dbCa}:ro`] : []),
    '--env-file',
    envFile,
    ...(RECORD_FLOWS
      ? [
          '-v',
          `${path.join(ROOT, 'deploy/local/record-flows.mjs')}:/dam-flows/record-flows.mjs:ro`,
          '-v',
          `${path.join(DIR, 'flows')}:/dam-flows/out`,
          '-e',
          'NODE_OPTIONS=--import=/dam-flows/record-flows.mjs',
          '-e',
          'DAM_RECORD_FLOWS=/dam-flows/out',
          '-e',
          `DAM_FLOW_SERVICE=${c.name === 'migrate' ? `migrate-${w.name}` : w.name}`,
        ]
      : []),
    c.image,
    ...c.args,
  ];
}

/**
 * The cache tier's pod (Workload.hostNginx): Debian's nginx with deploy/cache's configuration, listening at the
 * workload's address, reaching link-signing through its Service address (port 80, as the ConfigMap's config does),
 * until its readiness path answers. `down` stops it with its pid file.
 */
async function startHostNginx(form: Form, w: Workload, name: string): Promise<void> {
  const dir = path.join(DIR, name);
  const runDir = path.join(dir, 'run');
  const cacheDir = path.join(dir, 'cache');
  mkdirSync(runDir, { recursive: true });
  mkdirSync(cacheDir, { recursive: true });
  // Started as root, nginx's workers run as nobody: they must get through the run's folder (not read it).
  chmodSync(DIR, 0o711);
  chmodSync(dir, 0o755);
  const upstream = form.hosts['link-signing'];
  if (!upstream) throw new Error(`${w.name}: no link-signing Service to send misses to`);
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    renderCdnCacheConfig({
      upstream: `${upstream}:80`,
      listen: `${w.address}:${w.port}`,
      purgeListen: `${w.address}:${w.hostNginx?.purgePort}`,
      purgeAllow: 'all',
      cacheDir,
      runDir,
      workers: 1,
      errorLog: path.join(dir, 'error.log'),
      maxSize: '1g',
    }),
  );
  startProcess('nginx', ['-p', dir, '-c', conf], path.join(dir, 'nginx.log'));
  await until(`${w.name} ready`, 60_000, () => httpOk(`http://${w.address}:${w.port}${w.readyPath}`));
}

/** One pod of workload `w`: its init containers, then its main container `name`, until it is ready. */
export async function startPod(form: Form, w: Workload, caDir: string, name: string, initFailures: Record<string, string>): Promise<void> {
  if (w.hostNginx) return startHostNginx(form, w, name);
  for (const c of w.init) {
    const initName = `${name}-${c.name}`;
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn('podman', podmanArgs(w, c, form, caDir, initName, false), { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (out += d));
      p.on('close', (code) => resolve({ code, out }));
    });
    // Kubernetes would hold the pod in Init:CrashLoopBackOff: recorded (the tests hold a first install to no
    // failed init container), then the main container starts anyway so the rest of the run still says something.
    if (r.code !== 0) {
      initFailures[initName] = r.out.trim().slice(-1000);
      log(`INIT CONTAINER FAILED: ${initName} (exit ${r.code}): ${initFailures[initName]}`);
    }
  }
  const r = spawnSync('podman', podmanArgs(w, w.main, form, caDir, name, true), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`podman run ${name}: ${r.stderr}`);
  await until(`${w.name} ready`, 240_000, async () => {
    if (spawnSync('podman', ['inspect', '-f', '{{.State.Running}}', name], { encoding: 'utf8' }).stdout.trim() !== 'true') {
      throw Object.assign(new Error(`${name} exited: ${spawnSync('podman', ['logs', '--tail', '20', name], { encoding: 'utf8' }).stderr.slice(-3000)}`), {
        fatal: true,
      });
    }
    return httpOk(`http://${w.address}:${w.port}${w.readyPath}`);
  });
}

export function readState(): State {
  if (!existsSync(STATE)) throw new Error(`${STATE} is missing: the production form does not run (deploy/production-form/up)`);
  return JSON.parse(readFileSync(STATE, 'utf8')) as State;
}
export const readSecrets = (): Map<string, Record<string, string>> =>
  new Map(Object.entries(JSON.parse(readFileSync(SECRETS, 'utf8')) as Record<string, Record<string, string>>));
export const secretObject = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, labels: { 'app.kubernetes.io/part-of': 'dam' } },
  type: 'Opaque',
  stringData: data,
});
