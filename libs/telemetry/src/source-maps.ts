import Module from 'node:module';

/**
 * Source maps for this project's own code only. tsx turns Node's source maps on for the whole process, and Node 20
 * then reads and keeps the map of every module it compiles, the dependencies' too (their `sourcesContent` and, once
 * a stack is formatted, every mapping as an array): 12-43 MB of heap per service (addon 90 → 47 MB, metadata 60 →
 * 41, gateway 42 → 30; docs/benchmarks.md), which every full garbage collection marks again. Stack traces need the
 * maps of our TypeScript (tsx's transpiled lines differ from the source), not those of packages shipped as
 * JavaScript.
 *
 * Installed by importing this module before anything else (libs/telemetry's index imports it first, and every
 * service's main imports its instrument module first): dependencies compiled afterwards (CommonJS, by far most of
 * them) are compiled with source maps off. Node 22's `module.setSourceMapsSupport(true, { nodeModules: false })`
 * does this without wrapping `_compile`.
 */
interface CompilingModule {
  _compile(content: string, filename: string, ...rest: unknown[]): unknown;
}

const DEPENDENCY = /[\\/]node_modules[\\/]/;
const prototype = (Module as unknown as { prototype: CompilingModule }).prototype;
const marker = Symbol.for('dam.ownSourceMapsOnly');

/** Whether a file is a dependency's (its source map is not kept). */
export function isDependencyFile(filename: string): boolean {
  return DEPENDENCY.test(filename);
}

/** Wraps Module.prototype._compile once per process (idempotent). */
function keepSourceMapsForOwnCodeOnly(): void {
  const registry = globalThis as { [marker]?: true };
  if (registry[marker]) return;
  registry[marker] = true;
  const compile = prototype._compile;
  prototype._compile = function compileWithoutDependencyMaps(this: CompilingModule, content: string, filename: string, ...rest: unknown[]) {
    if (!process.sourceMapsEnabled || !isDependencyFile(filename)) return compile.call(this, content, filename, ...rest);
    process.setSourceMapsEnabled(false);
    try {
      return compile.call(this, content, filename, ...rest);
    } finally {
      process.setSourceMapsEnabled(true);
    }
  };
}

keepSourceMapsForOwnCodeOnly();
