import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { scaled } from '@dam/testing/src/time-scale';

const DIR = path.resolve(__dirname, '..');

it(
  'src/schema.d.ts is what openapi-typescript makes of docs/openapi.yaml (regenerate: pnpm --filter @dam/client generate)',
  async () => {
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'dam-client-')), 'schema.d.ts');
    await promisify(execFile)(path.join(DIR, 'node_modules', '.bin', 'openapi-typescript'), [path.join(DIR, '..', '..', 'docs', 'openapi.yaml'), '-o', out], {
      cwd: DIR,
      timeout: 60_000,
    });
    expect(readFileSync(path.join(DIR, 'src', 'schema.d.ts'), 'utf8')).toBe(readFileSync(out, 'utf8'));
  },
  scaled(90_000),
);
