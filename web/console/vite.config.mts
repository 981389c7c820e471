import { defineConfig } from 'vite';
import { noStringEval } from './vite-no-string-eval.mts';

// `vite` (pnpm --filter @dam/console dev) serves the sources and passes the API and config.json to a running gateway.
const gateway = process.env.DAM_BASE_URL ?? 'http://127.0.0.1:8080';

/**
 * The console, served by the gateway at `{base}/console/` (services/gateway/src/http/console.routes.ts): hashed
 * files below `static/` (cached for a year there), index.html without any inline script (the CSP has no
 * 'unsafe-inline'). picker.js is a second build: vite.picker.config.mts.
 */
export default defineConfig({
  base: '/console/',
  server: { proxy: { '/api': gateway, '/console/config.json': gateway } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // The gateway's CSP has no 'unsafe-eval': no library may evaluate a string as code (vite-no-string-eval.mts).
  plugins: [noStringEval()],
  build: {
    outDir: 'dist',
    assetsDir: 'static',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // Vite's preload helper needs no polyfill in the browsers the console supports, and the polyfill is code
    // that inspects every <link>: leave it out.
    modulePreload: { polyfill: false },
    // hls.js (about 580 kB) and OpenSeadragon (about 350 kB) are chunks of their own, loaded only when a player or
    // viewer opens: not worth a warning.
    chunkSizeWarningLimit: 600,
  },
});
