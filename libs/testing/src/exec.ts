import { execFile } from 'node:child_process';

/** Runs a command; rejects with its stdout and stderr in the message when it fails. */
export function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`.trim()));
        return;
      }
      resolve(stdout);
    });
  });
}
