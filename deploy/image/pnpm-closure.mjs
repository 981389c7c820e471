#!/usr/bin/env node
// Prints the pnpm virtual-store entries (node_modules/.pnpm/<entry>) that some packages need at run time: each
// one's own entry and, recursively, the entries of the dependencies pnpm linked next to it.
//   node deploy/image/pnpm-closure.mjs tsx                     a package linked at the workspace root
//   node deploy/image/pnpm-closure.mjs services/gateway libs/db  every dependency linked in those projects
//                                                               (and in the workspace projects they link)
// Run from the workspace root. Used by prune-prod.sh: to keep the devDependencies named in KEEP_PACKAGES (none by
// default) through the pruning, and to drop what only projects outside the image (test, bench, deploy) need.
import fs from 'node:fs';
import path from 'node:path';

const workspace = process.cwd();
const store = path.join(workspace, 'node_modules', '.pnpm');
const args = process.argv.slice(2);
if (args.length === 0) {
  console.error('usage: pnpm-closure.mjs <package | project folder> [...]');
  process.exit(64);
}

const found = new Set();
const projects = new Set();

// The links in a node_modules folder (scoped ones included), resolved.
function linksIn(modules) {
  if (!fs.existsSync(modules)) return [];
  const out = [];
  for (const name of fs.readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    const dirs = name.startsWith('@') ? fs.readdirSync(path.join(modules, name)).map((n) => path.join(modules, name, n)) : [path.join(modules, name)];
    for (const dir of dirs) {
      try {
        out.push(fs.realpathSync(dir));
      } catch {
        // a dangling link (an optional dependency for another platform): nothing to keep
      }
    }
  }
  return out;
}

function visit(real) {
  const rel = path.relative(store, real);
  if (!rel.startsWith('..') && !path.isAbsolute(rel)) {
    // node_modules/.pnpm/<entry>/node_modules/<name>: the entry holds the package and a link per dependency.
    const entry = rel.split(path.sep)[0];
    if (found.has(entry)) return;
    found.add(entry);
    for (const dep of linksIn(path.join(store, entry, 'node_modules'))) visit(dep);
  } else if (real.startsWith(workspace + path.sep) && fs.existsSync(path.join(real, 'package.json'))) {
    // A workspace project (workspace:* dependency): what it links in turn.
    if (projects.has(real)) return;
    projects.add(real);
    for (const dep of linksIn(path.join(real, 'node_modules'))) visit(dep);
  }
}

for (const arg of args) {
  const asProject = path.resolve(arg);
  if (arg.includes('/') && fs.existsSync(path.join(asProject, 'package.json'))) {
    visit(fs.realpathSync(asProject));
    continue;
  }
  const link = path.join(workspace, 'node_modules', arg);
  if (!fs.existsSync(link)) {
    console.error(`pnpm-closure: ${arg} is neither a project folder nor a package linked in ${path.dirname(link)}`);
    process.exit(1);
  }
  visit(fs.realpathSync(link));
}
console.log([...found].sort().join('\n'));
