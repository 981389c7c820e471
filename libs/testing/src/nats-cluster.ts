import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { generateNatsUsers, type NatsIdentity, renderNatsAuthorization } from '@dam/events';
import { TEST_SUBSCRIBERS } from './nats-subscribers';
import { onProcessExit } from './cleanup';
import { freePort } from './free-port';
import { scaled } from './time-scale';

/** One server of a TestNatsCluster. */
export interface TestNatsNode {
  /** Its `server_name` (`n1`, `n2`, ...): what JetStream names as meta, stream or consumer leader. */
  name: string;
  url: string;
  /** Monitoring endpoint (`/healthz`, `/jsz`, `/routez`, ...). */
  monitorUrl: string;
  running(): boolean;
  /** SIGKILL to the nats-server process itself (a crash: nothing flushed, no goodbye to the cluster); waits for its exit. */
  kill(): Promise<void>;
  /** Starts it again on the same ports with the same store folder; waits until it is back in the cluster and healthy. */
  restart(): Promise<void>;
  /** A clean shutdown (SIGTERM); the store folder stays for restart(). */
  stop(): Promise<void>;
  /** The server's log so far (its stderr). */
  logs(): string;
}

export interface TestNatsCluster {
  /** Every node's client URL, comma-separated: a NATS_URL the services take as it is. */
  url: string;
  urls: string[];
  nodes: TestNatsNode[];
  /** The nkey seed of an identity (NATS_NKEY_SEED of a service; `admin` for test code's own connections). */
  seed(identity: NatsIdentity): string;
  /** A service's NATS environment: NATS_URL (every node) and its identity's NATS_NKEY_SEED. */
  env(identity: NatsIdentity): { NATS_URL: string; NATS_NKEY_SEED: string };
  /** The node that is the JetStream meta leader now, as the running nodes see it. */
  metaLeader(): Promise<TestNatsNode>;
  /** The node of that `server_name`. */
  node(name: string): TestNatsNode;
  /** Stops every node and removes the store folders. */
  stop(): Promise<void>;
}

interface JszMeta {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

const READY_TIMEOUT_MS = scaled(30_000);

async function getJson<T>(url: string): Promise<{ status: number; body: T | undefined }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(scaled(2000)) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as T) : undefined };
  } catch {
    return { status: 0, body: undefined };
  }
}

/**
 * A JetStream cluster of `nodes` nats-servers on loopback (free client, route and monitoring ports), with the
 * suite's identities and permissions as startNats has them: each node its own store folder, routes to every
 * other node, one cluster name. Returns once every node answers /healthz, which needs a JetStream meta leader.
 * Nodes can be killed and restarted on the same ports and store, as a crashed server coming back.
 */
export async function startNatsCluster(opts: { nodes?: number } = {}): Promise<TestNatsCluster> {
  const count = opts.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new Error(`startNatsCluster: nodes must be a positive integer, not ${count}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-cluster-'));
  const users = generateNatsUsers(TEST_SUBSCRIBERS);
  const authorization = renderNatsAuthorization(users);
  const clusterName = `dam-test-${randomBytes(4).toString('hex')}`;
  const specs: Array<{ name: string; port: number; routePort: number; monitorPort: number }> = [];
  for (let i = 1; i <= count; i++) {
    specs.push({ name: `n${i}`, port: await freePort(), routePort: await freePort(), monitorPort: await freePort() });
  }

  const nodes = specs.map((spec) => {
    const nodeDir = path.join(dir, spec.name);
    mkdirSync(nodeDir);
    const pidFile = path.join(nodeDir, 'nats.pid');
    const config = path.join(nodeDir, 'nats.conf');
    const routes = specs.filter((s) => s !== spec).map((s) => JSON.stringify(`nats-route://127.0.0.1:${s.routePort}`));
    writeFileSync(
      config,
      [
        `server_name: ${JSON.stringify(spec.name)}`,
        `listen: "127.0.0.1:${spec.port}"`,
        `http: "127.0.0.1:${spec.monitorPort}"`,
        `pid_file: ${JSON.stringify(pidFile)}`,
        `jetstream { store_dir: ${JSON.stringify(path.join(nodeDir, 'store'))} }`,
        'cluster {',
        `  name: ${JSON.stringify(clusterName)}`,
        `  listen: "127.0.0.1:${spec.routePort}"`,
        `  routes: [${routes.join(', ')}]`,
        '}',
        authorization,
      ].join('\n'),
      { mode: 0o600 },
    );
    return new ClusterNode(spec.name, spec.port, spec.monitorPort, config, pidFile);
  });

  const removeExitHandler = onProcessExit(() => {
    for (const n of nodes) n.abandon();
    rmSync(dir, { recursive: true, force: true });
  });
  const stop = async (): Promise<void> => {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
    removeExitHandler();
  };

  try {
    for (const n of nodes) n.spawn();
    await Promise.all(nodes.map((n) => n.waitHealthy()));
  } catch (error) {
    await stop();
    throw error;
  }

  const seed = (identity: NatsIdentity): string => {
    const user = users.find((u) => u.identity === identity);
    if (!user) throw new Error(`no NATS identity ${identity}`);
    return user.seed;
  };
  const node = (name: string): TestNatsNode => {
    const found = nodes.find((n) => n.name === name);
    if (!found) throw new Error(`no NATS node ${name}`);
    return found;
  };
  const urls = nodes.map((n) => n.url);
  const url = urls.join(',');
  return {
    url,
    urls,
    nodes,
    seed,
    env: (identity) => ({ NATS_URL: url, NATS_NKEY_SEED: seed(identity) }),
    node,
    async metaLeader() {
      for (const n of nodes.filter((x) => x.running())) {
        const { body } = await getJson<JszMeta>(`${n.monitorUrl}/jsz`);
        const leader = body?.meta_cluster?.leader;
        if (leader) return node(leader);
      }
      throw new Error('no running node knows a JetStream meta leader');
    },
    stop,
  };
}

class ClusterNode implements TestNatsNode {
  readonly url: string;
  readonly monitorUrl: string;
  private child: ChildProcessByStdio<Writable, null, Readable> | undefined;
  private exited: Promise<void> = Promise.resolve();
  private output: string[] = [];

  constructor(
    readonly name: string,
    port: number,
    monitorPort: number,
    private readonly config: string,
    private readonly pidFile: string,
  ) {
    this.url = `nats://127.0.0.1:${port}`;
    this.monitorUrl = `http://127.0.0.1:${monitorPort}`;
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  logs(): string {
    return this.output.join('');
  }

  /** Starts the server through the same watchdog wrapper as startNats (it goes away with the test process). */
  spawn(): void {
    const child = spawn(path.join(__dirname, 'nats-watchdog.sh'), ['-c', this.config], { stdio: ['pipe', 'ignore', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > 2000) this.output.splice(0, this.output.length - 2000);
    });
    child.once('error', (error) => this.output.push(`spawn error: ${error.message}\n`));
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
    this.child = child;
  }

  /** Until /healthz answers 200 (JetStream on, its streams and consumers caught up) and /jsz names a meta leader. */
  async waitHealthy(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      if (!this.running()) throw new Error(`nats-server ${this.name} exited while starting\n${this.logs().slice(-2000)}`);
      const { status, body } = await getJson<{ error?: string }>(`${this.monitorUrl}/healthz`);
      if (status === 200) {
        // /healthz wants contact with a meta leader; /jsz names it (the only proof the cluster formed).
        const leader = (await getJson<JszMeta>(`${this.monitorUrl}/jsz`)).body?.meta_cluster?.leader;
        if (leader) return;
        last = 'no JetStream meta leader yet';
      } else {
        last = body?.error ?? `status ${status}`;
      }
      if (Date.now() > deadline) throw new Error(`nats-server ${this.name} not healthy after ${timeoutMs} ms (${last})\n${this.logs().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running()) throw new Error(`nats-server ${this.name} is not running`);
    const pid = Number(readFileSync(this.pidFile, 'utf8').trim());
    // Only the server this node's wrapper started: never a process that merely reused an old pid.
    const parent = /^PPid:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    if (!Number.isInteger(pid) || Number(parent) !== child.pid) throw new Error(`nats-server ${this.name}: pid ${pid} is not the wrapper's child`);
    process.kill(pid, 'SIGKILL');
    await this.exited;
    child.stdin.destroy();
  }

  async restart(): Promise<void> {
    if (this.running()) throw new Error(`nats-server ${this.name} is still running`);
    this.output.push(`--- restarted ---\n`);
    this.spawn();
    await this.waitHealthy();
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running()) return;
    child.stdin.end();
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, scaled(5000)))]);
    if (this.running()) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** At process exit (synchronous): closing the wrapper's stdin stops the server. */
  abandon(): void {
    this.child?.stdin.destroy();
  }
}
