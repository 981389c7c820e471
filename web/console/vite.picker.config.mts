import { defineConfig } from 'vite';
import { noStringEval } from './vite-no-string-eval.mts';

/**
 * `{base}/console/picker.js`: the file picker for other sites' pages, one self-contained IIFE (no imports, no
 * chunks) that defines `window.DamPicker` and loads `picker.css` from next to itself. Built after the console
 * into the same dist/ (emptyOutDir false). See src/picker/entry.ts for the ways to embed it.
 */
export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // Host pages may have a CSP without 'unsafe-eval' as well (vite-no-string-eval.mts).
  plugins: [noStringEval()],
  // A library build leaves process.env.NODE_ENV for the host to define; nothing here reads it at run time.
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    copyPublicDir: false,
    target: 'es2020',
    sourcemap: true,
    lib: {
      entry: 'src/picker/entry.ts',
      name: 'DamPicker',
      formats: ['iife'],
      fileName: () => 'picker.js',
      cssFileName: 'picker',
    },
  },
});
