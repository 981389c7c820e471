import { execFile, execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { scaled } from './time-scale';

/** Runs a command; rejects with its stdout and stderr in the message when it fails (or after `timeoutMs`, stretched by TEST_TIME_SCALE). */
export function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { ...process.env, ...env }, timeout: scaled(timeoutMs), maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`.trim()));
        return;
      }
      resolve(stdout);
    });
  });
}

/**
 * Stop functions for a server started by one of deploy/infra's scripts: `<script> stop <dir>`, then the temp
 * folder goes. Each runs once; `stopSync` is for process-exit handlers, where nothing async runs.
 */
export function scriptStopper(script: string, dir: string, base: string): { stop(): Promise<void>; stopSync(): void } {
  let stopped = false;
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      await run(script, ['stop', dir]);
      rmSync(base, { recursive: true, force: true });
    },
    stopSync() {
      if (stopped) return;
      stopped = true;
      execFileSync(script, ['stop', dir], { stdio: 'ignore' });
      rmSync(base, { recursive: true, force: true });
    },
  };
}
