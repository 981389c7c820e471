import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { onProcessExit } from './cleanup';
import { freePort } from './free-port';
import { repoRoot } from './paths';
import { scaled } from './time-scale';
import { httpOk } from './wait-for';

export interface ServiceProcessOptions {
  /** Port to listen on; a free one by default. */
  port?: number;
  /** How long to wait for GET /readyz to answer 200 (30 s on the reference machine, stretched by TEST_TIME_SCALE). */
  readyTimeoutMs?: number;
  /** Skip the readiness wait (for tests of a start that must fail). */
  waitReady?: boolean;
  /** Entry file instead of services/<name>/src/main.ts (test fixtures). */
  entry?: string;
}

export interface ServiceProcess {
  name: string;
  url: string;
  port: number;
  pid: number;
  /** Sends a signal (SIGKILL to simulate a crash). */
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then waits for exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** Resolves with the exit code/signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every stdout/stderr line so far. */
  logs(): string[];
  /** Resolves with the first line (past or future) matching `pattern`; `timeoutMs` (10 s) is stretched by TEST_TIME_SCALE. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/** The lines a service logged at warn level or above (pino's JSON lines): evidence for a failed test. */
export function warningLines(p: Pick<ServiceProcess, 'logs'>): string[] {
  return p.logs().filter((l) => /"level":"(warn|error|fatal)"/.test(l));
}

const MAX_LINES = 20_000;
// Resolve tsx's loader by absolute path so the child needs no particular working directory.
const tsxLoader = (): string => pathToFileURL(require.resolve('tsx', { paths: [repoRoot] })).href;

/**
 * Runs services/<name>/src/main.ts in its own Node process (tsx loader, one process so SIGKILL really kills
 * the service) with HOST=127.0.0.1, PORT and `env`, and waits until GET /readyz answers 200.
 */
export async function startServiceProcess(name: string, env: Record<string, string | undefined>, opts: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  const entry = opts.entry ?? path.join(repoRoot, 'services', name, 'src', 'main.ts');
  if (!existsSync(entry)) throw new Error(`startServiceProcess: ${entry} does not exist`);
  const port = opts.port ?? (await freePort());
  const watchdog = path.join(__dirname, 'child-watchdog.cjs');
  const child = spawn(process.execPath, ['--require', watchdog, '--import', tsxLoader(), entry], {
    cwd: repoRoot,
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...env, PORT: String(port) },
    // The IPC channel only serves the watchdog: it closes when this process dies.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  // Neither the channel nor the pipes may keep a test process alive.
  child.channel?.unref();

  const lines: string[] = [];
  const listeners = new Set<(line: string) => void>();
  const onLine = (line: string): void => {
    lines.push(line);
    if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
    for (const l of listeners) l(line);
  };
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', onLine);
  }

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      onLine(`spawn error: ${error.message}`);
      resolve({ code: -1, signal: null });
    });
  });
  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null;
  const removeExitHandler = onProcessExit(() => child.kill('SIGKILL'));
  void exited.then(removeExitHandler);

  const tail = (): string => lines.slice(-40).join('\n');
  const url = `http://127.0.0.1:${port}`;

  const service: ServiceProcess = {
    name,
    url,
    port,
    pid: child.pid ?? -1,
    exited,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal);
    },
    async stop() {
      if (!isRunning()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), scaled(10_000));
      await exited;
      clearTimeout(timer);
    },
    logs: () => [...lines],
    waitForLog(pattern, baseTimeoutMs = 10_000) {
      const timeoutMs = scaled(baseTimeoutMs);
      const seen = lines.find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`${name}: no log line matching ${pattern} after ${timeoutMs} ms; log tail:\n${tail()}`));
        }, timeoutMs);
        const listener = (line: string): void => {
          if (!pattern.test(line)) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(line);
        };
        listeners.add(listener);
      });
    },
  };

  if (opts.waitReady === false) return service;
  const readyTimeoutMs = scaled(opts.readyTimeoutMs ?? 30_000);
  const deadline = Date.now() + readyTimeoutMs;
  // A plain loop rather than waitFor: a process that exited must fail at once, not after the timeout.
  for (;;) {
    if (!isRunning()) {
      const { code, signal } = await exited;
      throw new Error(`startServiceProcess(${name}): exited before ready (code ${code}, signal ${signal}); log tail:\n${tail()}`);
    }
    if (await httpOk(`${url}/readyz`)) break;
    if (Date.now() > deadline) {
      await service.stop();
      throw new Error(`startServiceProcess(${name}): /readyz not 200 after ${readyTimeoutMs} ms; log tail:\n${tail()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return service;
}
