/**
 * What an operator does to a cluster, done to the running production form (run.ts get-secrets, apply-secrets,
 * restart): docs/operations.md "Upgrade: new NATS permissions" and "Rotation, one identity at a time" as written,
 * with these three standing for `kubectl get secret -o yaml`, `kubectl apply` and `kubectl rollout restart`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { parseExistingSecrets, type SecretObject } from '../k8s/secrets';
import { buildForm, nginxConf, renderOverlay, type Container, type Form, type Listeners, type Workload } from './form';
import { DIR, IMAGE, log, mountNatsSecrets, readSecrets, readState, secretObject, SECRETS, sh, since, startPod, STATE, until } from './host';

/** `kubectl get secret -l app.kubernetes.io/part-of=dam -o yaml`: a List, the values base64 in `data`. */
export function getSecrets(): string {
  const items = [...readSecrets()].map(([name, data]) => {
    const { stringData: _plain, ...o } = secretObject(name, data);
    return { ...o, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
  });
  return stringify({ apiVersion: 'v1', kind: 'List', items }, { lineWidth: 0 });
}

/**
 * `kubectl apply` of Secrets: their keys replace the stored ones (what later starts read), and the NATS nodes' Secret
 * volumes are swapped in at once (the kubelet's refresh, without its minute of delay). Running containers keep the
 * environment they started with, as pods do.
 */
export function applySecrets(yamlText: string): string[] {
  const state = readState();
  const applied = parseExistingSecrets(yamlText);
  if (applied.size === 0) throw new Error('no Secret to apply');
  const secrets = readSecrets();
  for (const [name, data] of applied) secrets.set(name, { ...secrets.get(name), ...data });
  writeFileSync(SECRETS, JSON.stringify(Object.fromEntries(secrets), null, 1), { mode: 0o600 });
  const form = buildForm(
    renderOverlay('dev'),
    [...secrets].map(([n, d]) => secretObject(n, d) as SecretObject),
    IMAGE,
  );
  if (Object.values(form.natsSecretVolumes).some((n) => applied.has(n))) for (let i = 0; i < state.pids.nats.length; i++) mountNatsSecrets(form, secrets, i);
  return [...applied.keys()];
}

const nginxWorkers = (nginxDir: string): string[] => {
  const master = readFileSync(path.join(nginxDir, 'nginx.pid'), 'utf8').trim();
  return spawnSync('pgrep', ['-P', master], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
};

/**
 * `kubectl rollout restart deployment/<name>` with maxUnavailable 0: a new pod (its init containers, then its main
 * container with the Secrets as they are now) at a new address; once it is ready, the Service and the Ingress send
 * new connections to it (nginx reloaded, its old workers finish what they serve), then the old pod stops (SIGTERM, 30 s).
 */
export async function restart(workload: string): Promise<void> {
  const state = readState();
  const secrets = readSecrets();
  const form = buildForm(
    renderOverlay('dev'),
    [...secrets].map(([n, d]) => secretObject(n, d) as SecretObject),
    IMAGE,
  );
  const w = form.workloads.find((x) => x.name === workload);
  if (!w || !state.nginx) throw new Error(`no workload ${workload} (${form.workloads.map((x) => x.name).join(', ')})`);
  state.restarts += 1;
  writeFileSync(STATE, JSON.stringify(state, null, 1), { mode: 0o600 });
  const address = `127.0.1.${200 + state.restarts}`;
  const withHost = (c: Container): Container => ({ ...c, env: { ...c.env, ...('HOST' in c.env ? { HOST: address } : {}) } });
  const pod: Workload = { ...w, address, init: w.init.map(withHost), main: withHost(w.main) };
  // The headless <name>-peers Service lists the ready pods: the new one.
  const podForm: Form = { ...form, hosts: { ...form.hosts, ...(`${workload}-peers` in form.hosts ? { [`${workload}-peers`]: address } : {}) } };
  const name = `pf-${workload}-${state.restarts}`;
  const old = state.containers.find((c) => c === `pf-${workload}` || c.startsWith(`pf-${workload}-`)) as string;
  const t = performance.now();
  await startPod(podForm, pod, path.join(DIR, 'db-ca'), name, state.initFailures);
  const listeners = JSON.parse(readFileSync(path.join(DIR, 'workloads.json'), 'utf8')) as Listeners;
  listeners.workloads.push({ name: workload, address, port: w.port });
  writeFileSync(path.join(DIR, 'workloads.json'), JSON.stringify(listeners, null, 1));
  state.nginx.pods = { ...state.nginx.pods, [workload]: address };
  writeFileSync(path.join(state.nginx.dir, 'nginx.conf'), `user www-data;\n${nginxConf(form, state.nginx)}`);
  const workers = nginxWorkers(state.nginx.dir);
  sh('nginx', ['-s', 'reload', '-c', path.join(state.nginx.dir, 'nginx.conf'), '-p', state.nginx.dir]);
  // Each old worker stops accepting on its QUIT (its title then says so) and ends once its connections do: the
  // Services' TCP connections of other pods may hold it for long, but no new connection reaches it.
  const accepting = () => workers.filter((p) => existsSync(`/proc/${p}`) && !readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('shutting down'));
  await until('nginx on the new configuration (its old workers no longer accepting)', 60_000, () => accepting().length === 0);
  state.containers = [...state.containers.filter((c) => c !== old), name];
  writeFileSync(STATE, JSON.stringify(state, null, 1), { mode: 0o600 });
  spawnSync('podman', ['stop', '-t', '30', old], { stdio: 'inherit' });
  spawnSync('podman', ['rm', '-f', old], { stdio: 'ignore' });
  log(`${workload} restarted: ${name} at ${address}, ready in ${since(t)} ms; ${old} stopped`);
}
