import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import { redactUrl, runWithRequestId, type Logger } from '@dam/logging';
import { setMetricsService } from '@dam/metrics';
import { errorMiddleware, notFoundRoute } from './errors';
import { httpMetricsMiddleware, metricsRoute } from './http-metrics';
import { rejectNulInBody, rejectNulInTarget } from './nul';
import { parseTrustProxy, type TrustProxy } from './trust-proxy';
import { rejectInvalidText } from './utf8';

/**
 * One check's state for `/readyz`: `true` passes; `false` fails and makes the service unready (503 `unavailable`);
 * `'degraded'` fails without deciding readiness (200 `degraded`): a dependency the service serves without (NATS).
 * The body's `checks` says `false` for both kinds of failure.
 */
export type CheckState = boolean | 'degraded';

export type ReadinessCheck = () => Promise<Record<string, CheckState>>;

export interface HttpAppOptions {
  logger: Logger;
  readiness?: ReadinessCheck;
  /**
   * More of the service's state for `/readyz`'s body that does not decide readiness (the addon's models, which load
   * while it already takes jobs): each key beside `status` and `checks`.
   */
  readinessDetails?: () => Record<string, unknown>;
  /** Largest JSON body accepted; larger ones answer 413. */
  jsonLimit?: string;
  /** The `service` label of every metric; defaults to the logger's `service` binding. */
  service?: string;
  /**
   * Serve `GET /metrics` to any caller, not only loopback ones. Defaults to env `METRICS_PUBLIC=true`; keep
   * it off on public edges (gateway, upload, link-signing) unless the scraper is not on the same host.
   */
  metricsPublic?: boolean;
  /**
   * Proxies whose X-Forwarded-For is believed for `req.ip` (rate-limit buckets, login delays, the address the
   * gateway forwards). Defaults to env `TRUST_PROXY` (see trust-proxy.ts); none when unset.
   */
  trustProxy?: TrustProxy;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Response headers whose value is a URL that may carry a credential in its query. */
const URL_HEADERS = ['location', 'content-location', 'x-dam-accel-redirect'];

/**
 * The headers an access line keeps: enough to tell clients and payloads apart. Every other header is left out, which
 * keeps credentials out by construction and the line short (a whole header set doubled the cost of logging a
 * request on the read path, issue 33).
 */
const LOGGED_REQUEST_HEADERS = ['user-agent', 'content-type', 'content-length', 'x-forwarded-for', 'referer'];
const LOGGED_RESPONSE_HEADERS = ['content-type', 'content-length', ...URL_HEADERS];

function pickHeaders(headers: Record<string, unknown> | undefined, names: readonly string[]): Record<string, unknown> | undefined {
  if (!headers) return undefined;
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = headers[name];
    if (value === undefined) continue;
    out[name] = typeof value === 'string' && URL_HEADERS.includes(name) ? redactUrl(value) : value;
  }
  return out;
}

export function createHttpApp(opts: HttpAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', opts.trustProxy ?? parseTrustProxy(process.env.TRUST_PROXY));
  app.set('query parser', 'simple');
  const service = opts.service ?? (opts.logger.bindings() as { service?: unknown }).service;
  if (typeof service === 'string') setMetricsService(service);

  app.use((req, res, next) => {
    // No response of the suite is to be content-sniffed: downloads declare their type, errors are JSON.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const incoming = req.header('x-request-id');
    const id = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', id);
    runWithRequestId(id, next);
  });
  app.use(httpMetricsMiddleware());
  app.use(
    pinoHttp({
      logger: opts.logger,
      genReqId: (_req, res) => String(res.getHeader('x-request-id')),
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' || req.url === '/metrics' },
      // Credentials in URLs (`_jwt`, `uploadkey`, signatures...) never reach a log line.
      serializers: {
        req: (req: { id?: unknown; method?: string; url?: string; headers?: Record<string, unknown>; remoteAddress?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url && redactUrl(req.url),
          headers: pickHeaders(req.headers, LOGGED_REQUEST_HEADERS),
          remoteAddress: req.remoteAddress,
        }),
        // And in the response's URLs: a tus Location made with `?uploadkey`, the presigned download the gateway is
        // told to serve (`x-dam-accel-redirect`, any tenant's bytes for 300 s).
        res: (res: { statusCode?: number; headers?: Record<string, unknown> }) => ({
          statusCode: res.statusCode,
          headers: pickHeaders(res.headers, LOGGED_RESPONSE_HEADERS),
        }),
      },
      // A 503 is a dependency that is down (said once by the error middleware), not a fault of this service.
      customLogLevel: (_req, res, err) => (err || (res.statusCode >= 500 && res.statusCode !== 503) ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    }),
  );

  app.get('/metrics', metricsRoute(opts.metricsPublic ?? process.env.METRICS_PUBLIC === 'true'));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    let states: Record<string, CheckState> = {};
    try {
      states = opts.readiness ? await opts.readiness() : {};
    } catch (err) {
      opts.logger.warn({ err }, 'readiness check failed');
      states = { readiness: false };
    }
    const values = Object.values(states);
    // A failing deciding check takes the pod out of its Service (503); a failing degraded one only says so (200).
    const status = values.includes(false) ? 'unavailable' : values.includes('degraded') ? 'degraded' : 'ok';
    const checks = Object.fromEntries(Object.entries(states).map(([name, state]) => [name, state === true]));
    res.status(status === 'unavailable' ? 503 : 200).json({ ...opts.readinessDetails?.(), status, checks });
  });

  app.use(rejectNulInTarget);
  // Decoded strictly: bytes that are not UTF-8 answer 400 rather than reaching a route as U+FFFD (CONTRACT §16).
  app.use(express.json({ limit: opts.jsonLimit ?? '1mb', type: ['application/json', 'application/*+json'], verify: rejectInvalidText }));
  app.use(rejectNulInBody);
  return app;
}

/** Adds the trailing 404 and error handlers; call after every route is registered. */
export function finishApp(app: Express, logger: Logger): Express {
  app.use(notFoundRoute);
  app.use(errorMiddleware(logger));
  return app;
}
