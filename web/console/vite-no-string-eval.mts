import type { Plugin } from 'vite';

/**
 * `Function('return this')()`: the global-object fallback of lodash's _root.js (lodash/debounce.js and
 * lodash/throttle.js, imported by @uppy/core and @uppy/dashboard) and of other libraries' feature detection.
 * A browser never reaches it (`self` comes first), but it is a string evaluated as code, which the gateway's CSP
 * (no 'unsafe-eval') forbids: nothing in the console's bundles may contain one, not even unreached.
 */
const FUNCTION_RETURN_THIS = /(?<![\w$.])(?:new\s+)?Function\s*\(\s*(['"`])return this\1\s*\)\s*\(\s*\)/g;

/**
 * Rewrites `Function('return this')()` in code from node_modules to `globalThis` (ES2020, below both builds'
 * targets), which is what the expression yields in every environment the console runs in. Used by both
 * vite.config.mts and vite.picker.config.mts; test/no-eval.unit.test.ts checks the emitted bundles.
 */
export function noStringEval(): Plugin {
  return {
    name: 'dam:no-string-eval',
    transform: {
      // Only node_modules: the console's own code has no business with either, and a match there should fail the
      // bundle scan rather than be silently rewritten.
      filter: { id: /[\\/]node_modules[\\/]/, code: 'return this' },
      handler(code) {
        const rewritten = code.replace(FUNCTION_RETURN_THIS, (match) => 'globalThis'.padEnd(match.length));
        if (rewritten === code) return null;
        // Padded to the replaced length, so every line and column is where it was: the module's source map is
        // still exact (map: null keeps it), and the minifier drops the spaces.
        return { code: rewritten, map: null };
      },
    },
  };
}
