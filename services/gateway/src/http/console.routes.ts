import { statSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { notFound, unavailable } from '@dam/errors';

/** web/console/dist at the repository root: what `pnpm --filter @dam/console build` writes. */
export const CONSOLE_DIST_DIR = path.resolve(__dirname, '../../../../web/console/dist');

export interface ConsoleRoutesOptions {
  /** The built console; CONSOLE_DIST_DIR by default. */
  dir?: string;
  /** `{upload}` as browsers reach it (the picker's tus endpoint lives there). */
  publicUploadUrl: string;
  /** `{cdn}` as browsers reach it (signed links: thumbnails, previews, players). */
  publicCdnUrl: string;
}

/** Files whose name carries a content hash (Vite's `static/<name>-<hash>.<ext>`, see web/console/vite.config.ts): cached for a year. */
const HASHED = /^\/static\//;
/** Files that are not routes of the single-page app: a missing one is a 404, never index.html. */
const FILE_LIKE = /\.[A-Za-z0-9]{1,8}$/;

/**
 * The policy of every console response. Everything is bundled (no CDN, no inline script, no eval); the API is
 * same-origin, uploads go to `{upload}`, signed links to `{cdn}`. `data:` images are the thumbhash placeholders,
 * `blob:` images Uppy's previews, `blob:` media hls.js's MediaSource (its worker is off:
 * no blob: worker).
 */
export function consoleCsp(uploadOrigin: string, cdnOrigin: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob: ${cdnOrigin}`,
    `media-src 'self' blob: ${cdnOrigin}`,
    `connect-src 'self' ${uploadOrigin} ${cdnOrigin}`,
    "font-src 'self'",
    "worker-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

/**
 * `{base}/console/`: the web console (web/console/dist) as static files, with `config.json` (where the browser
 * finds `{upload}` and `{cdn}`) and `picker.js`, the file picker other sites embed. Public: the files hold no data,
 * the console logs in through the API. Unknown routes below /console/ answer index.html (the app's own router
 * reads the path); a console that was never built answers 503 CONSOLE_NOT_BUILT.
 */
export function consoleRoutes(opts: ConsoleRoutesOptions): Router {
  const dir = path.resolve(opts.dir ?? CONSOLE_DIST_DIR);
  const upload = new URL(opts.publicUploadUrl).origin;
  const cdn = new URL(opts.publicCdnUrl).origin;
  const csp = consoleCsp(upload, cdn);
  const config = JSON.stringify({ upload: opts.publicUploadUrl.replace(/\/$/, ''), cdn: opts.publicCdnUrl.replace(/\/$/, '') });
  // Checked on each request until found: a console built after the gateway started is served without a restart.
  let built = false;
  const isBuilt = (): boolean => (built ||= isFile(path.join(dir, 'index.html')));

  const common = (res: Response): void => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('X-Frame-Options', 'DENY');
  };

  const serve = (req: Request, res: Response, next: (err?: unknown) => void): void => {
    const rel = req.path.slice('/console'.length) || '/';
    if (rel === '/config.json') {
      // Read by the console and by picker.js on other sites' pages: no credentials involved, any origin.
      common(res);
      res.set({ 'Cache-Control': 'no-cache', 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' });
      res.type('application/json').send(config);
      return;
    }
    if (!isBuilt()) {
      next(unavailable('The web console has not been built on this server (pnpm --filter @dam/console build)', 'CONSOLE_NOT_BUILT'));
      return;
    }
    const file = resolveInside(dir, rel);
    let target: string;
    let cache: string;
    if (file && isFile(file)) {
      target = file;
      cache = HASHED.test(rel) ? 'public, max-age=31536000, immutable' : 'no-cache';
    } else if (!FILE_LIKE.test(rel) && file !== undefined) {
      target = path.join(dir, 'index.html');
      cache = 'no-cache';
    } else {
      next(notFound('NOT_FOUND', 'No such file in the console'));
      return;
    }
    common(res);
    const embeddable = /^\/picker\.(js|css)$/.test(rel);
    res.sendFile(
      target,
      {
        cacheControl: false,
        dotfiles: 'deny',
        headers: {
          'Cache-Control': cache,
          // The picker is loaded by other sites' pages (a script and a stylesheet of another origin).
          'Cross-Origin-Resource-Policy': embeddable ? 'cross-origin' : 'same-origin',
          ...(embeddable ? { 'Access-Control-Allow-Origin': '*' } : {}),
        },
      },
      (err?: Error & { status?: number; statusCode?: number }) => {
        if (!err) return;
        if (res.headersSent) return; // the client went away mid-file: nothing left to answer
        const status = err.status ?? err.statusCode;
        next(status === 404 ? notFound('NOT_FOUND', 'No such file in the console') : err);
      },
    );
  };

  const router = Router();
  router.use((req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next();
      return;
    }
    if (req.path === '/console') {
      res.redirect(301, `/console/${req.originalUrl.slice('/console'.length)}`);
      return;
    }
    if (req.path.startsWith('/console/')) serve(req, res, next);
    else next();
  });
  return router;
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The file a request path names inside `dir`, or undefined for a path that would leave it (or is malformed). */
function resolveInside(dir: string, rel: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rel);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const file = path.resolve(dir, `.${path.posix.normalize(decoded)}`);
  return file === dir || file.startsWith(`${dir}${path.sep}`) ? file : undefined;
}
