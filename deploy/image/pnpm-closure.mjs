#!/usr/bin/env node
// Prints the pnpm virtual-store entries (node_modules/.pnpm/<entry>) that the named packages need at run time:
// each package's own entry and, recursively, the entries of the dependencies pnpm linked next to it.
// Usage (from the workspace root): node deploy/image/pnpm-closure.mjs tsx [more packages...]
// Used by prune-prod.sh to keep a devDependency the image runs with (tsx) when node_modules is pruned.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve('node_modules');
const store = path.join(root, '.pnpm');
const names = process.argv.slice(2);
if (names.length === 0) {
  console.error('usage: pnpm-closure.mjs <package> [...]');
  process.exit(64);
}

// node_modules/.pnpm/<entry>/node_modules/<name> (or /@scope/<name>) -> <entry>
function entryOf(realDir) {
  const rel = path.relative(store, realDir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${realDir} is not inside ${store}`);
  return rel.split(path.sep)[0];
}

const found = new Set();
const visit = (realDir) => {
  const entry = entryOf(realDir);
  if (found.has(entry)) return;
  found.add(entry);
  // The entry's node_modules holds the package itself and a link per dependency (optional ones only when installed).
  const modules = path.join(store, entry, 'node_modules');
  for (const name of fs.readdirSync(modules)) {
    const dirs = name.startsWith('@') ? fs.readdirSync(path.join(modules, name)).map((n) => path.join(modules, name, n)) : [path.join(modules, name)];
    for (const dir of dirs) {
      if (name === '.bin') continue;
      const real = fs.realpathSync(dir);
      if (real.startsWith(store + path.sep)) visit(real);
    }
  }
};

for (const name of names) {
  const link = path.join(root, name);
  if (!fs.existsSync(link)) {
    console.error(`pnpm-closure: ${link} does not exist (is ${name} installed at the workspace root?)`);
    process.exit(1);
  }
  visit(fs.realpathSync(link));
}
console.log([...found].sort().join('\n'));
