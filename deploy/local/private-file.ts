import { chmodSync, renameSync, writeFileSync } from 'node:fs';

/**
 * Writes a secret file readable by its owner only, whole under a temporary name and then renamed: a crash
 * never leaves half a key file, and the mode is right whatever the umask.
 */
export function writePrivate(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
