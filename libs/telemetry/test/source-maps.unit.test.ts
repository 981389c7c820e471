import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { isDependencyFile } from '../src/source-maps';
import { scaled } from '@dam/testing/src/time-scale';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const HOOK = path.join(ROOT, 'libs', 'telemetry', 'src', 'source-maps.ts');

/** A CommonJS file with a source map beside it, as packages ship them. */
function moduleWithMap(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'index.js');
  writeFileSync(file, 'module.exports = 1;\n//# sourceMappingURL=index.js.map\n');
  writeFileSync(
    path.join(dir, 'index.js.map'),
    JSON.stringify({ version: 3, sources: ['index.ts'], sourcesContent: ['export = 1;'], names: [], mappings: 'AAAA' }),
  );
  return file;
}

describe('source maps for our own code only', () => {
  let dir: string;
  let dependency: string;
  let own: string;
  let script: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'dam-source-maps-'));
    dependency = moduleWithMap(path.join(dir, 'node_modules', 'dep'));
    own = moduleWithMap(path.join(dir, 'own'));
    script = path.join(dir, 'script.ts');
    // Run as the services run (node --import tsx): which maps Node keeps, and where a TypeScript stack points.
    writeFileSync(
      script,
      [
        `if (process.env.HOOK === '1') require(${JSON.stringify(HOOK)});`,
        `import { findSourceMap } from 'node:module';`,
        `require(${JSON.stringify(dependency)});`,
        `require(${JSON.stringify(own)});`,
        `type Unused = { a: string };`,
        `const where = (): string => (new Error('here').stack ?? '').split('\\n')[1] ?? '';`,
        `console.log(JSON.stringify({ dependency: findSourceMap(${JSON.stringify(dependency)}) !== undefined, own: findSourceMap(${JSON.stringify(own)}) !== undefined, frame: where() }));`,
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = async (hook: boolean) => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, HOOK: hook ? '1' : '0' } });
    return JSON.parse(stdout.trim()) as { dependency: boolean; own: boolean; frame: string };
  };

  it(
    'keeps no map of a dependency, and still maps our own files and TypeScript lines',
    async () => {
      const seen = await run(true);
      expect(seen.dependency).toBe(false);
      expect(seen.own).toBe(true);
      expect(seen.frame).toContain('script.ts:6:');
    },
    scaled(30_000),
  );

  it(
    'without it, tsx has Node keep every dependency map',
    async () => {
      expect((await run(false)).dependency).toBe(true);
    },
    scaled(30_000),
  );

  it('tells dependencies by a node_modules directory in their path', () => {
    expect(isDependencyFile('/app/node_modules/.pnpm/x@1/node_modules/x/index.js')).toBe(true);
    expect(isDependencyFile('C:\\app\\node_modules\\x\\index.js')).toBe(true);
    expect(isDependencyFile('/app/services/gateway/src/main.ts')).toBe(false);
    expect(isDependencyFile('/app/libs/node_modules_like/x.ts')).toBe(false);
  });
});
