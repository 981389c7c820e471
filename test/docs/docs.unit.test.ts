/**
 * The repository explains itself (issue 32): what the code and the docs cite exists inside the repository, and the
 * README's map of the tree is the tree.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const SKIP = new Set(['node_modules', 'dist', '.git', '.data', 'test-artifacts', 'coverage']);
const CITING = /\.(ts|tsx|mjs|js|sh|md|yaml|yml|sql)$/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...files(rel));
    else if (CITING.test(entry.name)) out.push(rel);
  }
  return out;
}
const TREE = ['README.md', ...['docs', 'libs', 'services', 'web', 'deploy', 'test', 'k8s', 'examples', 'bench'].flatMap((d) => files(d))];

/** Every `<pattern>` match in the tree, as "file: match". */
function citations(pattern: RegExp): Array<{ file: string; n: number }> {
  const out: Array<{ file: string; n: number }> = [];
  for (const file of TREE) {
    for (const m of read(file).matchAll(pattern)) out.push({ file, n: Number(m[1]) });
  }
  return out;
}

describe('docs/contract.md, the contract the code cites', () => {
  const contract = read('docs/contract.md');
  const sections = new Set([...contract.matchAll(/^## (\d+)\. /gm)].map((m) => Number(m[1])));

  it('has every section that a `CONTRACT §n` anywhere in the tree names', () => {
    const cited = citations(/CONTRACT §(\d+)/g);
    expect(cited.length).toBeGreaterThan(100);
    expect(cited.filter((c) => !sections.has(c.n))).toEqual([]);
  });

  const shared = path.resolve(ROOT, '../shared/api/CONTRACT.md');
  (existsSync(shared) ? it : it.skip)('is the contract the project is held to, word for word from its conventions on', () => {
    const body = (text: string) => text.slice(text.indexOf('Conventions used below'));
    expect(body(contract)).toBe(body(readFileSync(shared, 'utf8')));
  });
});

describe('docs/architecture.md, the rules the code cites', () => {
  it('numbers every rule an "ARCHITECTURE rule N" names', () => {
    const architecture = read('docs/architecture.md');
    const rulesSection = architecture.slice(architecture.indexOf('## Rules'), architecture.indexOf('\n## ', architecture.indexOf('## Rules') + 1));
    const rules = new Set([...rulesSection.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1])));
    expect(rules.size).toBe(10);
    const cited = citations(/ARCHITECTURE rule (\d+)/g);
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter((c) => !rules.has(c.n))).toEqual([]);
  });
});

describe('links and the map of the tree', () => {
  it('every relative link of README.md and docs/*.md points at a file of the repository', () => {
    const broken: string[] = [];
    for (const file of TREE.filter((f) => f === 'README.md' || /^docs\/[^/]+\.md$/.test(f))) {
      for (const m of read(file).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/i.test(target)) continue;
        if (!existsSync(path.resolve(ROOT, path.dirname(file), target))) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("README's Layout names every lib and every service", () => {
    const readme = read('README.md');
    const line = (folder: string) => readme.match(new RegExp(`^${folder}/\\s+(.*)$`, 'm'))?.[1] ?? '';
    for (const folder of ['libs', 'services']) {
      const listed = new Set(
        line(folder)
          .split(/,\s*/)
          .map((s) => s.trim()),
      );
      const present = readdirSync(path.join(ROOT, folder), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
      expect(present.filter((p) => !listed.has(p))).toEqual([]);
    }
  });
});

describe('the documented commands', () => {
  it('apply the Secrets server-side, so no plaintext copy stays in an annotation', () => {
    const lines = ['README.md', 'k8s/README.md', 'docs/operations.md', 'deploy/k8s/secrets.ts']
      .flatMap((file) =>
        read(file)
          .split('\n')
          .map((line) => ({ file, line })),
      )
      .filter(({ line }) => /k8s:secrets/.test(line) && /\|\s*kubectl apply/.test(line));
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.filter(({ line }) => !/kubectl apply --server-side --field-manager=dam-secrets /.test(line))).toEqual([]);
  });
});
