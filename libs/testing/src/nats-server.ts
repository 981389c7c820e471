import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { generateNatsUsers, type NatsIdentity, renderNatsAuthorization } from '@dam/events';
import { TEST_SUBSCRIBERS } from './nats-subscribers';
import { onProcessExit } from './cleanup';
import { freePort } from './free-port';
import { scaled } from './time-scale';
import { httpOk } from './wait-for';

export interface TestNats {
  url: string;
  /** Monitoring endpoint (`/healthz`, `/jsz`, ...). */
  monitorUrl: string;
  /** The nkey seed of an identity (NATS_NKEY_SEED of a service; `admin` for test code's own connections). */
  seed(identity: NatsIdentity): string;
  /** A service's NATS environment: NATS_URL and its identity's NATS_NKEY_SEED. */
  env(identity: NatsIdentity): { NATS_URL: string; NATS_NKEY_SEED: string };
  /** Whether the server process runs (false while paused, and after stop()). */
  running(): boolean;
  /**
   * Stops the server (a clean shutdown: SIGTERM, SIGKILL after 5 s) but keeps its ports, config and store
   * folder for resume(): the first half of a NATS restart. Waits for its exit.
   */
  pause(): Promise<void>;
  /**
   * Starts the paused server again on the same port and monitor port with the same config and store folder (its
   * streams, consumers and messages as they were); waits until it is ready, as startNats does.
   */
  resume(): Promise<void>;
  /** Stops the server and removes its store folder. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = scaled(15_000);

/** One nats-server process, through the watchdog wrapper; its stderr goes to `output`. */
class ServerProcess {
  readonly child: ChildProcessByStdio<Writable, null, Readable>;
  readonly exited: Promise<void>;
  private spawnError: Error | undefined;

  constructor(args: string[], output: string[]) {
    // Through a wrapper that stops the server when our end of its stdin closes (also when we are SIGKILLed).
    this.child = spawn(path.join(__dirname, 'nats-watchdog.sh'), args, { stdio: ['pipe', 'ignore', 'pipe'] });
    this.child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    this.exited = new Promise<void>((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.once('error', () => resolve());
    });
    this.child.once('error', (error) => (this.spawnError = error));
  }

  running(): boolean {
    return this.spawnError === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Until the monitoring endpoint says JetStream is up; the reason when the server failed or took too long. */
  async ready(monitorUrl: string): Promise<string | undefined> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (this.spawnError) return `nats-server did not start: ${this.spawnError.message}`;
      if (this.child.exitCode !== null) return `nats-server exited with code ${this.child.exitCode}`;
      if (Date.now() > deadline) return `nats-server not ready after ${READY_TIMEOUT_MS / 1000} s`;
      if (await httpOk(`${monitorUrl}/healthz?js-enabled-only=true`)) return undefined;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Closing the wrapper's stdin stops the server cleanly; SIGKILL to the wrapper when that takes over 5 s. */
  async halt(): Promise<void> {
    if (!this.running()) return;
    this.child.stdin.end();
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, scaled(5000)))]);
    if (this.running()) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** At process exit (synchronous). */
  abandon(): void {
    this.child.stdin.destroy();
  }
}

/**
 * Its own nats-server with JetStream on free ports and a temp store folder; one per test file is typical. It
 * runs with the suite's identities and permissions (no anonymous access), as deploy/local does. It can be
 * paused and resumed on the same ports and store (a NATS restart under running services).
 */
export async function startNats(): Promise<TestNats> {
  const port = await freePort();
  const monitorPort = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-'));
  const users = generateNatsUsers(TEST_SUBSCRIBERS);
  const config = path.join(dir, 'nats.conf');
  writeFileSync(config, renderNatsAuthorization(users), { mode: 0o600 });
  const args = ['-c', config, '-js', '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-sd', dir];
  const output: string[] = [];
  let server = new ServerProcess(args, output);
  let stopped = false;
  const removeExitHandler = onProcessExit(() => {
    server.abandon();
    rmSync(dir, { recursive: true, force: true });
  });

  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  const stop = async (): Promise<void> => {
    stopped = true;
    await server.halt();
    rmSync(dir, { recursive: true, force: true });
    removeExitHandler();
  };
  const failure = await server.ready(monitorUrl);
  if (failure) {
    await stop();
    throw new Error(`${failure}\n${output.join('').slice(-2000)}`);
  }

  const pause = async (): Promise<void> => {
    if (stopped) throw new Error('nats-server was stopped');
    if (!server.running()) throw new Error('nats-server is not running');
    await server.halt();
  };
  const resume = async (): Promise<void> => {
    if (stopped) throw new Error('nats-server was stopped');
    if (server.running()) throw new Error('nats-server is still running');
    output.push('--- resumed ---\n');
    server = new ServerProcess(args, output);
    const failed = await server.ready(monitorUrl);
    if (failed) {
      await server.halt();
      throw new Error(`${failed}\n${output.join('').slice(-2000)}`);
    }
  };

  const seed = (identity: NatsIdentity): string => {
    const user = users.find((u) => u.identity === identity);
    if (!user) throw new Error(`no NATS identity ${identity}`);
    return user.seed;
  };
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    monitorUrl,
    seed,
    env: (identity) => ({ NATS_URL: url, NATS_NKEY_SEED: seed(identity) }),
    running: () => server.running(),
    pause,
    resume,
    stop,
  };
}
