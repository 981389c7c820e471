import { spawn } from 'node:child_process';

/**
 * Debian's tesseract, reading an image from stdin and writing TSV to stdout (no file on disk, no network).
 * Rejects with tesseract's own message, or when it runs longer than `timeoutMs`.
 */
export function runTesseract(image: Buffer, opts: { path: string; language: string; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(opts.path, ['stdin', 'stdout', '-l', opts.language, '--psm', '3', 'tsv'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`tesseract cannot run: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else if (signal) reject(new Error(`tesseract stopped after ${opts.timeoutMs} ms`));
      else reject(new Error(`tesseract failed: ${Buffer.concat(err).toString('utf8').trim().split('\n').slice(-3).join(' ')}`));
    });
    child.stdin.on('error', () => undefined); // a tesseract that exits early closes its stdin
    child.stdin.end(image);
  });
}

/** Whether tesseract runs here and knows the language (for /readyz). */
export async function tesseractReady(path: string, language: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(path, ['--list-langs'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0 && out.split('\n').some((l) => l.trim() === language.split('+')[0])));
  });
}
