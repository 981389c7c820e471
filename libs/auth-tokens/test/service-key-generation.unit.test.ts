import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { scaled } from '../../testing/src/time-scale';

/**
 * generateServiceKey must not deadlock the process. Exporting a KeyObject that generateKeyPairSync returned can hang
 * Node 20 for good (the export holds the key's mutex while allocating; a garbage collection finalizes the generation
 * job, whose destructor waits for that mutex). A hung main thread also stops jest's timers, so the keys are made in a
 * child process with a deadline, and a small young generation for frequent collections: the old code hung there
 * within 10,000 keys in each of 6 tries.
 */
it('makes 30,000 service keys in a row without hanging', () => {
  const source = path.join(__dirname, '../src/service-token.ts');
  const script = `
    const { generateServiceKey } = require(${JSON.stringify(source)});
    const kept = [];
    for (let i = 0; i < 30000; i++) {
      kept.push(generateServiceKey('gateway', 'k' + i));
      if (kept.length > 500) kept.length = 0;
    }
    const { privateJwk, publicJwk } = generateServiceKey('gateway', 'last');
    process.stdout.write(JSON.stringify({ privateJwk, publicJwk }));
  `;
  const run = spawnSync(process.execPath, ['--max-semi-space-size=1', '--require', 'tsx/cjs', '-e', script], { timeout: scaled(30_000), encoding: 'utf8' });
  expect({ signal: run.signal, status: run.status, stderr: run.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
  const { privateJwk, publicJwk } = JSON.parse(run.stdout) as Record<string, Record<string, string>>;
  expect(privateJwk).toMatchObject({ kty: 'EC', crv: 'P-256', kid: 'gateway.last', alg: 'ES256', use: 'sig', d: expect.any(String) });
  expect(publicJwk).toMatchObject({ kty: 'EC', crv: 'P-256', x: privateJwk?.x, y: privateJwk?.y, kid: 'gateway.last' });
  expect(publicJwk).not.toHaveProperty('d');
});
