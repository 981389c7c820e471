import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateNatsUsers, type NatsIdentity, renderNatsAuthorization } from '@dam/events';
import { onProcessExit } from './cleanup';
import { freePort } from './free-port';
import { httpOk } from './wait-for';

export interface TestNats {
  url: string;
  /** Monitoring endpoint (`/healthz`, `/jsz`, ...). */
  monitorUrl: string;
  /** The nkey seed of an identity (NATS_NKEY_SEED of a service; `admin` for test code's own connections). */
  seed(identity: NatsIdentity): string;
  /** A service's NATS environment: NATS_URL and its identity's NATS_NKEY_SEED. */
  env(identity: NatsIdentity): { NATS_URL: string; NATS_NKEY_SEED: string };
  stop(): Promise<void>;
}

/**
 * Its own nats-server with JetStream on free ports and a temp store folder; one per test file is typical. It
 * runs with the suite's identities and permissions (no anonymous access), as deploy/local does.
 */
export async function startNats(): Promise<TestNats> {
  const port = await freePort();
  const monitorPort = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-'));
  const users = generateNatsUsers();
  const config = path.join(dir, 'nats.conf');
  writeFileSync(config, renderNatsAuthorization(users), { mode: 0o600 });
  const args = ['-c', config, '-js', '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-sd', dir];
  // Through a wrapper that stops the server when our end of its stdin closes (also when we are SIGKILLed).
  const child = spawn(path.join(__dirname, 'nats-watchdog.sh'), args, { stdio: ['pipe', 'ignore', 'pipe'] });
  const output: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));
  const removeExitHandler = onProcessExit(() => {
    child.stdin.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin.end();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
    removeExitHandler();
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    const failure = spawnError
      ? `nats-server did not start: ${spawnError.message}`
      : child.exitCode !== null
        ? `nats-server exited with code ${child.exitCode}`
        : Date.now() > deadline
          ? 'nats-server not ready after 15 s'
          : undefined;
    if (failure) {
      await stop();
      throw new Error(`${failure}\n${output.join('').slice(-2000)}`);
    }
    if (await httpOk(`${monitorUrl}/healthz?js-enabled-only=true`)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seed = (identity: NatsIdentity): string => {
    const user = users.find((u) => u.identity === identity);
    if (!user) throw new Error(`no NATS identity ${identity}`);
    return user.seed;
  };
  const url = `nats://127.0.0.1:${port}`;
  return { url, monitorUrl, seed, env: (identity) => ({ NATS_URL: url, NATS_NKEY_SEED: seed(identity) }), stop };
}
