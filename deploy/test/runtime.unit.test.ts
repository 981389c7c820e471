/**
 * Node.js 24 (issue 31): the suite runs on the project's pinned runtime, not on whatever node a machine has
 * (Node 20 reached end of life on 2026-04-30). The version is pinned once, in deploy/infra/node-env.sh;
 * install-deps.sh installs it and test/run-all.sh (`pnpm test:all`, CI) puts it first on PATH. So when CI runs
 * this file: jest itself and the service processes the harness starts (startServiceProcess spawns the node that
 * runs jest) are that exact version, and the declarations that name the runtime agree with it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServiceProcess } from '../../libs/testing/src/service-process';
import { scaled } from '../../libs/testing/src/time-scale';

jest.setTimeout(scaled(30_000));

const ROOT = path.resolve(__dirname, '..', '..');

/** DAM_NODE_VERSION as deploy/infra/node-env.sh pins it (read by sourcing it, as the scripts do). */
function pinnedVersion(): string {
  const out = execFileSync('sh', ['-c', 'DAM_NODE_OPTIONAL=1 . deploy/infra/node-env.sh && echo "$DAM_NODE_VERSION"'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).trim();
  expect(out).toMatch(/^\d+\.\d+\.\d+$/);
  return out;
}
const major = (v: string): string => v.split('.')[0] ?? v;

describe('the runtime the suite runs on', () => {
  const pinned = pinnedVersion();

  it('is Node.js 24, pinned to an exact version', () => {
    expect(major(pinned)).toBe('24');
  });

  it('jest runs on the pinned Node.js (test/run-all.sh sources deploy/infra/node-env.sh)', () => {
    expect(process.versions.node).toBe(pinned);
  });

  it('a service process the harness starts runs on the same Node.js', async () => {
    const child = await startServiceProcess(
      'runtime-report',
      {},
      {
        entry: path.join(__dirname, 'fixtures', 'runtime-report.ts'),
        waitReady: false,
      },
    );
    try {
      const line = await child.waitForLog(/^runtime node=/);
      expect(line).toBe(`runtime node=${pinned} execPath=${process.execPath}`);
    } finally {
      await child.stop();
    }
  });

  it('the declarations that name the runtime agree with the pin', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
    };
    expect(pkg.engines.node).toBe(`>=${major(pinned)} <${Number(major(pinned)) + 1}`);
    expect(pkg.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${major(pinned)}\\.`));
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${pinned.replace(/\./g, '\\.')}-bookworm-slim$`, 'm'));
    // For version managers (nvm, fnm) in a developer's shell.
    expect(readFileSync(path.join(ROOT, '.nvmrc'), 'utf8')).toBe(`${pinned}\n`);
  });

  it("deploy/infra/node-env.sh puts the installed pin first on PATH, over the machine's node", () => {
    const out = execFileSync('bash', ['-c', '. deploy/infra/node-env.sh && node --version && command -v node'], {
      cwd: ROOT,
      encoding: 'utf8',
      // A shell that never sourced it: the machine's PATH.
      env: { ...process.env, PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
    }).split('\n');
    expect(out[0]).toBe(`v${pinned}`);
    expect(out[1]).toMatch(new RegExp(`/v${pinned.replace(/\./g, '\\.')}/bin/node$`));
  });
});
