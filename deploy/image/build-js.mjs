#!/usr/bin/env node
// Compiles the services to JavaScript: what the image runs (deploy/image/run-service), with no TypeScript loader.
//   node deploy/image/build-js.mjs [service ...]       (default: every services/<name>/src/main.ts)
//   node deploy/image/build-js.mjs --entry <file.ts> <out.js>
// writes, for each service, services/<name>/dist/main.js (+ .map) and one file per operator task (a package.json
// script `tsx src/<task>.ts`, e.g. search's `replay`: services/search/dist/replay.js, `run-service task search
// replay`), and libs/db/dist/migrate-cli.js (+ .map), the `run-service migrate <service>` entry. Works from any
// directory; `pnpm --filter @dam/<name> build` runs it for one service.
//
// One esbuild bundle per entry: the entry's own code and the workspace libraries it imports (@dam/*, whose
// package.json point at src/*.ts) are compiled in; every third-party package stays external (native and
// data-bearing ones above all: sharp, onnxruntime-node, the addon's models, ...) and is required from
// node_modules at run time, exactly as the TypeScript sources require it. Two things keep the bundle behaving
// like its sources:
// - where a package is found: a bundle sits in services/<name>/dist, one level from services/<name>/src, so what
//   the service's own files require resolves as from src. What a library requires is resolved from that
//   library's folder (libs/<lib>/node_modules under pnpm's strict layout, where the service may not link it):
//   the bundle requires it through `createRequire(<the library's package.json>)`, with the library's path
//   relative to the bundle, so the tree can move (/work/... here, /app in the image).
// - files read next to the sources (migrations/*.sql, docs/openapi.yaml, web/console/dist, the addon's
//   assets): `__dirname` and `__filename` in a compiled file name its source folder and file, not the bundle's.
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUILTINS = new Set(builtinModules);
const SEP = '\0';

const usage = () => {
  console.error('usage: build-js.mjs [service ...]          (services with a src/main.ts under services/; default all)');
  console.error('       build-js.mjs --entry <file.ts> <out.js>   (one more program, e.g. a check run in the image)');
  process.exit(64);
};

const allServices = () =>
  fs
    .readdirSync(path.join(ROOT, 'services'))
    .filter((name) => fs.existsSync(path.join(ROOT, 'services', name, 'src', 'main.ts')))
    .sort();

/** The folder of the nearest package.json above `file` (cached per folder). */
const packageRoots = new Map();
function packageRootOf(file) {
  const start = path.dirname(file);
  for (let dir = start; ; dir = path.dirname(dir)) {
    const known = packageRoots.get(dir);
    if (known !== undefined) return known;
    if (fs.existsSync(path.join(dir, 'package.json'))) {
      packageRoots.set(start, dir);
      return dir;
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${file}`);
  }
}

/** The service's operator tasks: its package.json scripts that run `tsx src/<task>.ts`, main.ts apart. */
function tasksOf(dir) {
  const { scripts = {} } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return Object.values(scripts)
    .map((script) => /^tsx src\/([a-z0-9-]+)\.ts$/.exec(script)?.[1])
    .filter((task) => task !== undefined && task !== 'main');
}

const posix = (p) => p.split(path.sep).join('/');
const isBare = (spec) => !spec.startsWith('.') && !path.isAbsolute(spec);
const inNodeModules = (file) => file.split(path.sep).includes('node_modules');

/** The esbuild plugin that keeps the bundle's run-time lookups where the sources have them (see the top). */
function workspaceLayout(entryRoot, outdir) {
  return {
    name: 'dam-workspace-layout',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.damInner || !isBare(args.path) || args.namespace !== 'file') return undefined;
        const spec = args.path;
        if (spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0])) {
          return { path: spec, external: true };
        }
        const found = await build.resolve(spec, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: { damInner: true },
        });
        if (found.errors.length > 0) return { errors: found.errors };
        // A workspace package (a library's sources): compiled into the bundle.
        if (!inNodeModules(found.path)) return { path: found.path };
        const from = packageRootOf(args.importer);
        // The entry's own package: a plain require, found from dist/ as from src/.
        if (from === entryRoot) return { path: spec, external: true };
        return { path: `${posix(path.relative(outdir, from))}${SEP}${spec}`, namespace: 'dam-require' };
      });
      // A library's third-party import: required from the library's own folder.
      build.onLoad({ filter: /.*/, namespace: 'dam-require' }, (args) => {
        const [rel, spec] = args.path.split(SEP);
        const anchor = JSON.stringify(`${rel}/package.json`);
        return {
          contents: `module.exports = require('node:module').createRequire(require('node:path').join(__dirname, ${anchor}))(${JSON.stringify(spec)});`,
          loader: 'js',
          resolveDir: ROOT,
        };
      });
      // A workspace source file: __dirname/__filename name its own folder and file; in a library (any package
      // but the entry's), what `require.resolve()` and a `require()` of a computed name look up is looked up from
      // the library's folder, as for its imports above.
      build.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
        if (inNodeModules(args.path)) return undefined;
        const source = await fs.promises.readFile(args.path, 'utf8');
        const own = packageRootOf(args.path) === entryRoot;
        if (!/\b__(dirname|filename)\b/.test(source) && (own || !/\brequire\b/.test(source))) return undefined;
        const dir = JSON.stringify(posix(path.relative(outdir, path.dirname(args.path))) || '.');
        const base = JSON.stringify(path.basename(args.path));
        let contents = source.replace(/\b__(dirname|filename)\b/g, (_, which) =>
          which === 'dirname' ? `require('node:path').join(__dirname, ${dir})` : `require('node:path').join(__dirname, ${dir}, ${base})`,
        );
        if (!own) {
          const anchor = JSON.stringify(`${posix(path.relative(outdir, packageRootOf(args.path)))}/package.json`);
          const libraryRequire = `require('node:module').createRequire(require('node:path').join(__dirname, ${anchor}))`;
          // require('literal') is left to esbuild (and to onResolve above); only computed names are rewritten.
          contents = contents.replace(/\brequire\.resolve\(/g, `${libraryRequire}.resolve(`).replace(/\brequire\((?!\s*['"`])/g, `${libraryRequire}(`);
        }
        return { contents, loader: 'ts' };
      });
    },
  };
}

async function bundle(entry, outfile) {
  const outdir = path.dirname(outfile);
  const started = Date.now();
  const result = await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    // Stack traces name the TypeScript files (run-service starts node with --enable-source-maps).
    sourcemap: 'linked',
    sourcesContent: false,
    // The sources set no tsconfig paths; esbuild reads each file's tsconfig for what it honours.
    absWorkingDir: ROOT,
    plugins: [workspaceLayout(packageRootOf(entry), outdir)],
    metafile: true,
    logLevel: 'warning',
    logOverride: {
      // A `require()` of a computed name (libs/media's optional ffmpeg installer packages, the addon's model
      // builds): looked up at run time, on purpose, from the folder its source file's package is in (see above).
      'unsupported-require-call': 'silent',
    },
  });
  const inputs = Object.keys(result.metafile.inputs).filter((i) => !i.startsWith('dam-require:'));
  const bytes = fs.statSync(outfile).size;
  const shown = posix(path.relative(ROOT, outfile));
  console.log(`${shown}: ${inputs.length} sources, ${(bytes / 1024).toFixed(0)} KiB, ${Date.now() - started} ms`);
}

/** Bundles every service (or those named), their tasks and the migrate entry. */
async function buildServices(requested) {
  if (requested.some((a) => a.startsWith('-'))) usage();
  const known = allServices();
  for (const name of requested) {
    if (!known.includes(name)) {
      console.error(`build-js: unknown service '${name}' (one of: ${known.join(' ')})`);
      process.exit(64);
    }
  }
  for (const name of requested.length > 0 ? requested : known) {
    const dir = path.join(ROOT, 'services', name);
    fs.rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
    for (const entry of ['main', ...tasksOf(dir)]) {
      await bundle(path.join(dir, 'src', `${entry}.ts`), path.join(dir, 'dist', `${entry}.js`));
    }
  }
  // The init containers' entry: `run-service migrate <service>` (any service with src/migrations).
  await bundle(path.join(ROOT, 'libs', 'db', 'src', 'migrate-cli.ts'), path.join(ROOT, 'libs', 'db', 'dist', 'migrate-cli.js'));
}

const args = process.argv.slice(2);
try {
  if (args[0] === '--entry') {
    // One more program over the same tree (build-local.sh's check of the addon's models in the image). The output
    // must sit where it will run from, in the same layout: the bundle finds packages relative to its own folder.
    if (args.length !== 3 || !args[1].endsWith('.ts') || !args[2].endsWith('.js')) usage();
    await bundle(path.resolve(args[1]), path.resolve(args[2]));
  } else {
    await buildServices(args);
  }
} catch (error) {
  // esbuild has printed its errors already.
  if (!(error && Array.isArray(error.errors))) console.error(error);
  process.exit(1);
}
