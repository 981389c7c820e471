/**
 * The upgrade and rotation paths of docs/operations.md on the production form (issue 31): the NATS nodes run the
 * rendered auth-reloader sidecar beside them, and "Rotation, one identity at a time" for `nats:gateway` is done as
 * an operator does it, through the CLI (`k8s:secrets --existing - --rotate`, then `--prune-old-keys`), applied with
 * deploy/production-form/run.ts (apply-secrets: the kubelet's swap of the mounted Secret; restart: `kubectl rollout
 * restart`). Requests through the front door (a POST with an Idempotency-Key) are made the whole time, and every one
 * must succeed. The gateway's own use of NATS is its usage records (its answers are kept in its database since issue
 * 35): the rights of its old and new identities are checked directly.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import { inboxPrefixOf } from '@dam/events';
import { waitFor } from '@dam/testing';
import { formState, frontDoor, type Reply } from './front-door';

const state = formState();
const request = frontDoor(state);
const BASE = `https://${state.publicHosts[0]}`;
const DEPLOY = path.join(__dirname, '..', '..', 'deploy');
const nodes = state.pids.nats.map((_, i) => path.join(state.dir, `nats-${i}`));

/** The form's operator commands (run.ts), and a shell pipeline as docs/operations.md writes it. */
const run = (...args: string[]) =>
  execFileSync('node', ['--import', 'tsx', 'production-form/run.ts', ...args], { cwd: DEPLOY, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const RUN = 'node --import tsx production-form/run.ts';
const rerender = (flags: string) =>
  execFileSync(
    'bash',
    ['-o', 'pipefail', '-c', `${RUN} get-secrets | pnpm --silent --filter @dam/deploy k8s:secrets --existing - ${flags} | ${RUN} apply-secrets`],
    {
      cwd: DEPLOY,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
const secrets = () => JSON.parse(readFileSync(path.join(state.dir, 'secrets.json'), 'utf8')) as Record<string, Record<string, string>>;
const logOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
const reloads = () => nodes.map((d) => logOf(path.join(d, 'nats.log')).split('Reloaded server configuration').length - 1);
const signalled = () => nodes.map((d) => logOf(path.join(d, 'auth-reloader.log')).split('reload signalled').length - 1);

/** Every node reloaded since `before` (its auth-reloader signalled it), within two of the sidecar's polls and more. */
async function reloadedSince(before: { reloads: number[]; signalled: number[] }): Promise<void> {
  await waitFor(() => reloads().every((n, i) => n > (before.reloads[i] as number)) && signalled().every((n, i) => n > (before.signalled[i] as number)), {
    timeoutMs: 60_000,
    intervalMs: 500,
    description: 'every NATS node reloaded by its auth-reloader',
  });
  for (const d of nodes) expect(logOf(path.join(d, 'nats.log'))).not.toMatch(/Failed to reload/);
}
const counts = () => ({ reloads: reloads(), signalled: signalled() });

/** What an identity's seed may do on NATS: gateway's own rights (JetStream info, its bucket) and one it has not. */
async function natsRights(seed: string): Promise<string[]> {
  // As the gateway connects (libs/events connectNats): its replies come to its own inbox prefix.
  const nc = await connect({
    servers: state.natsServers,
    authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)),
    inboxPrefix: inboxPrefixOf('gateway'),
    reconnect: false,
    timeout: 5000,
  });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const attempt = async (what: string, f: () => Promise<unknown>) => {
      try {
        await f();
        return `${what}: allowed`;
      } catch (e) {
        return `${what}: ${/permission/i.test(String(e)) ? 'denied' : String(e)}`;
      }
    };
    return [await attempt('JetStream account info', () => jsm.getAccountInfo()), await attempt('ASSET_EVENTS', () => jsm.streams.info('ASSET_EVENTS'))];
  } finally {
    await nc.close();
  }
}
const GATEWAY_RIGHTS = ['JetStream account info: allowed', 'ASSET_EVENTS: denied'];

let jwt: string;
beforeAll(async () => {
  const r = await request(`${BASE}/api/v1/login`, {
    method: 'POST',
    from: '127.0.0.60',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: state.adminEmail, password: state.adminPassword }),
  });
  if (r.status !== 200) throw new Error(`login: ${r.status} ${r.body.toString()}`);
  jwt = r.json().jwt;
});

/** A POST through the gateway: a new collection under a new Idempotency-Key (metadata's outbox then publishes it). */
let made = 0;
const idempotentPost = (): Promise<Reply> =>
  request(`${BASE}/api/v1/collections`, {
    method: 'POST',
    from: '127.0.0.61',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json', 'idempotency-key': `rotation-${process.pid}-${++made}` },
    body: JSON.stringify({ name: `rotation ${made}`, shared: false }),
  });

describe('the NATS nodes of the production form', () => {
  it("run the rendered auth-reloader beside each node, on the node's auth.conf and the pid file its nats.conf names", () => {
    expect(state.pids.natsSidecars).toHaveLength(nodes.length);
    nodes.forEach((d, i) => {
      const pidFile = /^pid_file: (\S+)$/m.exec(readFileSync(path.join(d, 'nats.conf'), 'utf8'))?.[1];
      const script = readFileSync(`/proc/${state.pids.natsSidecars[i]}/cmdline`, 'utf8').split('\0').join(' ');
      expect(script).toContain(`conf='${d}/auth/auth.conf'; pid='${pidFile}'`);
      expect(readFileSync(pidFile as string, 'utf8').trim()).toBe(String(state.pids.nats[i]));
      expect(logOf(path.join(d, 'auth-reloader.log'))).toContain(`watching ${d}/auth/auth.conf`);
    });
  });
});

describe('rotation of one identity (nats:gateway), as docs/operations.md does it', () => {
  it('keeps the old key working until the restart, the new one with the same rights, then refuses the old one', async () => {
    // Requests through the front door the whole time, one after another.
    const failures: string[] = [];
    let served = 0;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          const r = await idempotentPost();
          if (r.status === 201) served += 1;
          else failures.push(`${r.status} ${r.body.toString().slice(0, 200)}`);
        } catch (e) {
          failures.push(String(e));
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const phases: string[] = [];
    let t = performance.now();
    const phase = (name: string) => {
      phases.push(`${name} ${((performance.now() - t) / 1000).toFixed(1)} s`);
      t = performance.now();
    };
    try {
      const oldSeed = secrets()['dam-gateway']?.NATS_NKEY_SEED as string;
      expect(await natsRights(oldSeed)).toEqual(GATEWAY_RIGHTS);

      // Apply the rotated Secrets; the reloaders signal the nodes.
      let before = counts();
      rerender('--rotate nats:gateway');
      const newSeed = secrets()['dam-gateway']?.NATS_NKEY_SEED as string;
      expect(newSeed).not.toBe(oldSeed);
      await reloadedSince(before);
      phase('rotated and reloaded');
      // (a) the running gateway, on the old key, still works; (b) the new key is a user with the same rights.
      expect((await idempotentPost()).status).toBe(201);
      expect(await natsRights(newSeed)).toEqual(GATEWAY_RIGHTS);
      expect(await natsRights(oldSeed)).toEqual(GATEWAY_RIGHTS);

      // `kubectl rollout restart deployment/gateway`: the new pod has the new seed, and works.
      run('restart', 'gateway');
      phase('gateway restarted');
      const pod = formState().containers.find((c) => c.startsWith('pf-gateway-')) as string;
      const env = execFileSync('podman', ['exec', pod, 'printenv', 'NATS_NKEY_SEED'], { encoding: 'utf8' }).trim();
      expect(env === newSeed).toBe(true);
      expect((await idempotentPost()).status).toBe(201);

      // Prune the old key: reloaded, the old seed is refused, the new one keeps its rights.
      before = counts();
      rerender('--prune-old-keys --only dam-nats-auth');
      await reloadedSince(before);
      phase('pruned and reloaded');
      await expect(natsRights(oldSeed)).rejects.toThrow(/authorization/i);
      expect(await natsRights(newSeed)).toEqual(GATEWAY_RIGHTS);
      expect((await idempotentPost()).status).toBe(201);
    } finally {
      polling = false;
      await poller;
    }
    console.log(`rotation of nats:gateway: ${phases.join(', ')}; ${served} requests through the front door, ${failures.length} failed`);
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(10);
  });
});
