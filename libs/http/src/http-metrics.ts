import type { Request, RequestHandler, Response } from 'express';
import { histogram, metricsHandler } from '@dam/metrics';
import { notFoundRoute } from './errors';

/** Paths that are scraped or probed every few seconds: counting them would drown the traffic that matters. */
const UNCOUNTED = new Set(['/metrics', '/healthz', '/readyz']);
const ROUTE_KEY = 'metricsRoute';

const requestDuration = () =>
  histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, matched route pattern and status, with their duration',
    labelNames: ['method', 'route', 'status'],
  });

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * For apps that route without express routes (the gateway's table): names the pattern that matched, so the
 * request is counted under it instead of "unmatched". Must be a pattern, never the raw path.
 */
export function setMetricsRoute(res: Response, pattern: string): void {
  res.locals[ROUTE_KEY] = pattern;
}

/** The matched route pattern (e.g. `/api/v1/assets/:id/data`); a bounded "unmatched" when no route matched. */
export function routeLabel(req: Request, res: Response): string {
  const explicit: unknown = res.locals[ROUTE_KEY];
  if (typeof explicit === 'string') return explicit;
  const path: unknown = (req.route as { path?: unknown } | undefined)?.path;
  // baseUrl is empty for routers mounted at the root (every service here); a mounted prefix is kept.
  return typeof path === 'string' ? `${req.baseUrl}${path}` : 'unmatched';
}

/** Observes every request's duration once the response is done (or the connection dropped: status "aborted"). */
export function httpMetricsMiddleware(): RequestHandler {
  const hist = requestDuration();
  return (req, res, next) => {
    if (UNCOUNTED.has(req.path)) {
      next();
      return;
    }
    const stop = hist.startTimer();
    let done = false;
    const record = (status: string) => {
      if (done) return;
      done = true;
      stop({ method: METHODS.has(req.method) ? req.method : 'OTHER', route: routeLabel(req, res), status });
    };
    // 'finish' comes before the client can see the response; 'close' alone means the connection dropped first.
    res.once('finish', () => record(String(res.statusCode)));
    res.once('close', () => record('aborted'));
    next();
  };
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 addresses. */
export function isLoopbackAddress(ip: string | undefined): boolean {
  if (!ip) return false;
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  return v4.startsWith('127.') || ip === '::1';
}

/**
 * `GET /metrics` for loopback callers only, unless `publicMetrics`. `req.ip` honours X-Forwarded-For only
 * from the proxies TRUST_PROXY names: behind a local reverse proxy, set it (e.g. `loopback`) so a public
 * request it relays is refused while a direct local scrape is answered. Refused callers get the ordinary 404 of an unknown route.
 */
export function metricsRoute(publicMetrics: boolean): RequestHandler {
  const handler = metricsHandler();
  return (req, res, next) => {
    if (!publicMetrics && !isLoopbackAddress(req.ip)) {
      notFoundRoute(req, res, next);
      return;
    }
    handler(req, res, next);
  };
}
