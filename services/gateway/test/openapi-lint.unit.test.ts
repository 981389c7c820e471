import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { scaled } from '@dam/testing/src/time-scale';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const REDOCLY = path.join(ROOT, 'node_modules', '.bin', 'redocly');
// Offline and quiet: no telemetry, no update check.
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

const lint = (file: string) =>
  promisify(execFile)(REDOCLY, ['lint', file, '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'summary'], { cwd: ROOT, env, timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, out: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
  );

describe('docs/openapi.yaml under @redocly/cli lint (recommended rules, redocly.yaml)', () => {
  it(
    'has no error and no warning',
    async () => {
      const { code, out } = await lint('docs/openapi.yaml');
      expect([code, out]).toEqual([0, expect.stringContaining('Your API description is valid')]);
      expect(out).not.toMatch(/\b(error|warning) [a-z0-9-]+: \d+/);
    },
    scaled(150_000),
  );

  it(
    'fails a broken document (the lint can fail)',
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
      const broken = path.join(dir, 'openapi.yaml');
      writeFileSync(
        broken,
        readFileSync(path.join(ROOT, 'docs', 'openapi.yaml'), 'utf8').replace(
          "$ref: '#/components/parameters/AssetId'",
          "$ref: '#/components/parameters/NoSuchParameter'",
        ),
      );
      const { code, out } = await lint(broken);
      expect(code).not.toBe(0);
      expect(out).toMatch(/no-unresolved-refs/);
    },
    scaled(150_000),
  );
});
