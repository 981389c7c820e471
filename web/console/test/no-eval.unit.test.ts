import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
// The one file, not @dam/testing's index: the console does not depend on the test library and its services.
import { scaled } from '../../../libs/testing/src/time-scale';

/**
 * The gateway serves the console with a CSP without 'unsafe-eval', and picker.js runs on other sites' pages whose
 * CSP may say the same: nothing in the bundles may evaluate a string as code, not even a library's feature
 * detection that a browser never reaches (vite-no-string-eval.mts removes lodash's). Both builds are made as
 * `pnpm build` makes them, into a directory of the test's own, and every emitted .js file is scanned.
 */
const CONSOLE_DIR = path.resolve(__dirname, '..');
const VITE_BIN = path.join(path.dirname(createRequire(path.join(CONSOLE_DIR, 'package.json')).resolve('vite/package.json')), 'bin', 'vite.js');
const run = promisify(execFile);

/**
 * The forms a minified bundle would hold. A pattern scan, not a proof: `globalThis['ev' + 'al']` passes it, so it
 * stands beside the CSP the browser tests run under, not instead of it. Look-alikes that are not caught on purpose:
 * `isFunction(`, `Function.prototype`, `instanceof Function`, `setTimeout(() => ...)`, `import(\`./chunk.js\`)`.
 */
const STRING_EVAL: readonly { what: string; pattern: RegExp }[] = [
  {
    what: 'the Function constructor',
    pattern: /(?<![\w$])Function\s*[(`]|(?<![\w$])new\s+Function\b|(?<![\w$.])Function\.(?:apply|call)\s*\(|\bReflect\.construct\s*\(\s*Function\b/,
  },
  { what: 'eval', pattern: /(?<![\w$])eval\s*[(`]|(?<![\w$.])eval\s*\)\s*\(/ },
  { what: 'a timer given a string', pattern: /(?<![\w$])set(?:Timeout|Interval|Immediate)\s*\(\s*["'`]/ },
  { what: "a function's constructor given a string (AsyncFunction, GeneratorFunction)", pattern: /\.constructor\s*\(\s*["'`]/ },
  { what: 'import() of a data: or blob: URL', pattern: /(?<![\w$])import\s*\(\s*["'`](?:data|blob):/ },
  { what: 'execScript', pattern: /(?<![\w$])execScript\s*\(/ },
];

function findStringEval(code: string): string[] {
  const found: string[] = [];
  for (const { what, pattern } of STRING_EVAL) {
    for (const m of code.matchAll(new RegExp(pattern.source, 'g'))) {
      found.push(`${what}: ...${code.slice(Math.max(0, m.index - 60), m.index + m[0].length + 40)}...`);
    }
  }
  return found;
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => path.join(e.parentPath, e.name));
}

describe('the string-evaluation scan', () => {
  it('finds each form', () => {
    const forms = [
      'n||r||Function(`return this`)()',
      'var f=new Function("a","return a")',
      'x=new Function;',
      'Function.apply(null,["return 1"])',
      'Reflect.construct(Function,["return 1"])',
      'eval("1+1")',
      'window.eval(s)',
      '(0,eval)(s)',
      'setTimeout("tick()",10)',
      'self.setInterval(`tick()`,10)',
      'Object.getPrototypeOf(async function(){}).constructor("return 1")',
      'await import("data:text/javascript,export default 1")',
      'window.execScript(s)',
    ];
    for (const form of forms) expect([form, findStringEval(form).length]).toEqual([form, 1]);
  });

  it('leaves what only looks like it alone', () => {
    const lookAlikes = [
      'typeof e.isFunction(t)',
      'Function.prototype.call.bind(Uint8Array.prototype.toBase64)',
      'return Function.toString.call(e).indexOf(`[native code]`)',
      'e.then instanceof Function}',
      'a.current=setTimeout(()=>{i(``)},3e3)',
      'function en(e,t,n){return this.constructor(e,n)}',
      'await import(`./hls-D6a35TnA.js`)',
      't.exports=n||r||globalThis',
      'wrapSyncFunction(fn)',
      "script-src 'self' 'unsafe-eval'",
    ];
    for (const code of lookAlikes) expect([code, findStringEval(code)]).toEqual([code, []]);
  });
});

describe('the built console and picker.js', () => {
  let out: string;

  beforeAll(async () => {
    out = mkdtempSync(path.join(os.tmpdir(), 'dam-console-build-'));
    // In the order of package.json's build: the console empties the directory, picker.js is added to it.
    for (const config of ['vite.config.mts', 'vite.picker.config.mts']) {
      await run(process.execPath, [VITE_BIN, 'build', '--config', config, '--outDir', out, '--logLevel', 'warn'], {
        cwd: CONSOLE_DIR,
        timeout: scaled(60_000),
        maxBuffer: 16 * 1024 * 1024,
      });
    }
  }, scaled(150_000));

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('evaluate no string as code', () => {
    const files = jsFiles(out);
    expect(files.map((f) => path.relative(out, f))).toEqual(expect.arrayContaining(['picker.js', expect.stringMatching(/^static\/index-.+\.js$/)]));
    const found = files.flatMap((f) => findStringEval(readFileSync(f, 'utf8')).map((x) => `${path.relative(out, f)}: ${x}`));
    expect(found).toEqual([]);
  });
});
