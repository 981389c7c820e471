import type { Express, RequestHandler } from 'express';
import {
  API_KEY_HEADER,
  UPLOAD_KEY_HEADER,
  callerKey,
  SERVICE_TOKEN_HEADER,
  createAuthenticator,
  principalOf,
  requireAny,
  type Principal,
  type ServiceSigner,
} from '@dam/auth-tokens';
import {
  createEdgeLimits,
  createHttpApp,
  finishApp,
  idempotent,
  memoryIdempotencyStore,
  setMetricsRoute,
  type EdgeLimitOptions,
  type IdempotencyStore,
  type ReadinessCheck,
  type TrustProxy,
} from '@dam/http';
import { validationFailed } from '@dam/errors';
import type { Logger } from '@dam/logging';
import { createProxy, type ForwardOptions, type UpstreamAnswer } from './adapters/http-proxy';
import { type CachedAnswer, type ReadCache } from './domain/read-cache';
import { canonicalPath, resolveRoute, type Upstream } from './domain/route-table';
import { consoleRoutes, type ConsoleRoutesOptions } from './http/console.routes';
import { openApiRoutes } from './http/openapi.routes';

export interface GatewayAppDeps {
  logger: Logger;
  /** The service's own readiness (its workers: the usage flush), reported beside the upstreams'. */
  readiness?: ReadinessCheck;
  jwtSecret: string;
  /** JWT_PREVIOUS_SECRET, during a rotation: tokens it signed are still accepted. */
  jwtPreviousSecret?: string;
  /** The gateway's own identity: every forwarded request carries a token it signs for that one request. */
  signer: ServiceSigner;
  upstreams: Record<Upstream, string>;
  /** Upstreams whose /healthz decides our /readyz: the ones nearly every request needs. */
  readinessUpstreams?: readonly Upstream[];
  upstreamTimeoutMs?: number;
  /** Idle time on an object-store socket (downloads the gateway streams itself) before it is abandoned. */
  storeTimeoutMs?: number;
  /**
   * Per caller (user, API key, or address for login and validate), per address before credentials are
   * checked, and failed authentications per address; each off when absent or 0 per minute.
   */
  limits?: EdgeLimitOptions;
  /** How long a JWT user's status from auth is reused (the delay before disabling a user takes effect). */
  userStatusTtlMs?: number;
  /**
   * Proxies whose X-Forwarded-For decides `req.ip`: the per-address buckets and the address forwarded and
   * signed into service tokens. Defaults to env TRUST_PROXY (none when unset).
   */
  trustProxy?: TrustProxy;
  /** Called once for every authenticated request (usage statistics: `api_requests`). */
  countRequest?: (principal: Principal) => void;
  /** Idempotency-Key on POSTs (CONTRACT §13); without it, in this process only. */
  idempotency?: IdempotencyStore;
  /** The web console at /console/ (CONTRACT §12); `{upload}` and `{cdn}` default to the local addresses. */
  console?: Partial<ConsoleRoutesOptions>;
  /** Get Data answers kept between metadata's notices of changes (see ReadCache); none kept without it. */
  readCache?: ReadCache;
}

/** A path segment as metadata reads it (the id its notices name). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The one route whose answers the read cache keeps: Get Data. */
const CACHED_ROUTE = '/api/v1/assets/:id/data';
/** The headers of a kept answer that are sent again with it (the rest are the gateway's own or hop-by-hop). */
const KEPT_HEADERS = ['content-type', 'etag', 'last-modified', 'cache-control', 'vary', 'content-language'];

/** What an answer depends on besides its URL: the caller and everything that decides what it may read. */
const readerKey = (p: Principal, url: string): string => `${p.group_id}:${p.user_id}:${p.role_id}:${p.via}:${p.key_id ?? ''}:${p.permissions.join(',')} ${url}`;

function toCached(answer: UpstreamAnswer | undefined): CachedAnswer | undefined {
  if (!answer) return undefined;
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = answer.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  // An answer its upstream says must not be stored is not kept.
  if (/\bno-store\b/i.test(headers['cache-control'] ?? '')) return undefined;
  return { headers, body: answer.body };
}

// A client's own copy of a service token never passes: only the one the gateway signs does.
const SERVICE_HEADERS = [SERVICE_TOKEN_HEADER];
// Past the gateway its token is the credential; the caller's own never travels further.
const CREDENTIAL_HEADERS = [...SERVICE_HEADERS, 'authorization', API_KEY_HEADER, UPLOAD_KEY_HEADER];

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url.replace(/\/$/, '')}/healthz`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

export function createGatewayApp(deps: GatewayAppDeps): { app: Express; close(): void } {
  const checked = deps.readinessUpstreams ?? ['auth', 'metadata'];
  const app = createHttpApp({
    logger: deps.logger,
    ...(deps.trustProxy !== undefined ? { trustProxy: deps.trustProxy } : {}),
    readiness: async () => {
      const [own, results] = await Promise.all([
        deps.readiness?.() ?? {},
        Promise.all(checked.map(async (u) => [u, await healthy(deps.upstreams[u])] as const)),
      ]);
      return { ...own, ...Object.fromEntries(results) };
    },
  });
  const proxy = createProxy({ logger: deps.logger, timeoutMs: deps.upstreamTimeoutMs ?? 60_000, storeTimeoutMs: deps.storeTimeoutMs ?? 30_000 });
  const authenticate = createAuthenticator({
    jwtSecret: deps.jwtSecret,
    ...(deps.jwtPreviousSecret ? { jwtPreviousSecret: deps.jwtPreviousSecret } : {}),
    authUrl: deps.upstreams.auth,
    signer: deps.signer,
    ...(deps.userStatusTtlMs !== undefined ? { userStatusTtlMs: deps.userStatusTtlMs } : {}),
  });
  const limits = createEdgeLimits(deps.limits ?? {});
  const idempotency = deps.idempotency ?? memoryIdempotencyStore();
  const authenticated = limits.authenticated(authenticate, (res) => callerKey(principalOf(res)));

  const route: RequestHandler = (req, res, next) => {
    // Routed and authorized on exactly the path that is forwarded: the upstream request is built with the URL parser,
    // which reads `\` as `/` and resolves dot segments, so a path it would change (`/assets/a\..\..\schemas` became
    // `/schemas`, past the permission of the route it matched here) is refused instead.
    const forwardedPath = canonicalPath(req.originalUrl);
    if (forwardedPath !== req.path) {
      next(validationFailed([{ path: 'path', message: 'must be in canonical form: no backslash, dot segment or character the URL parser would rewrite' }]));
      return;
    }
    const match = resolveRoute(req.method, req.path);
    if (!match) {
      next(); // the trailing 404 handler answers with the contract body
      return;
    }
    setMetricsRoute(res, match.rule.pattern);
    const { upstream } = match.rule;
    const target = deps.upstreams[upstream];
    /** The token for this request as forwarded: its upstream, method and path, the client, and the user if any. */
    const sign = (principal?: Principal) => (path: string, body: Buffer | 'streamed') =>
      deps.signer.headers({
        audience: upstream,
        method: req.method,
        path,
        ...(principal ? { principal } : {}),
        ...(req.ip ? { clientAddress: req.ip } : {}),
        ...(body === 'streamed' ? { streamedBody: true } : { body }),
      });
    if (match.rule.public) {
      limits.beforeAuth(req, res, (limited?: unknown) => {
        if (limited) return next(limited);
        try {
          limits.spendPrincipal(`ip:${req.ip ?? 'unknown'}`, res);
        } catch (e) {
          return next(e);
        }
        // Login and validate read the caller's own Authorization / _jwt: pass them as they are.
        proxy.forward(req, res, next, { target, serviceName: upstream, strip: SERVICE_HEADERS, set: sign() });
      });
      return;
    }
    authenticated(req, res, (err?: unknown) => {
      if (err) {
        next(err);
        return;
      }
      try {
        const principal = principalOf(res);
        deps.countRequest?.(principal);
        requireAny(principal, match.rule.anyOf);
        const cache = deps.readCache;
        let onAnswer: ForwardOptions['onAnswer'];
        if (cache && upstream === 'metadata' && req.method !== 'GET' && req.method !== 'HEAD') {
          // A write to the records: nothing kept before its end may be served after it (the caller reads its write).
          cache.clear();
          res.once('close', () => cache.clear());
        } else if (cache && req.method === 'GET' && match.rule.pattern === CACHED_ROUTE && match.params.id) {
          const key = readerKey(principal, req.originalUrl);
          // `Cache-Control: no-cache` (RFC 9111 §5.2.1.4): the client wants metadata's answer, which is then kept.
          const kept = /\bno-cache\b/i.test(req.headers['cache-control'] ?? '') ? undefined : cache.get(key);
          if (kept) {
            res.status(200).set(kept.headers);
            // express answers a matching If-None-Match with 304, as metadata would.
            res.send(kept.body);
            return;
          }
          const ticket = cache.begin(decodedSegment(match.params.id));
          onAnswer = { maxBytes: cache.maxEntryBytes, done: (answer) => cache.keep(ticket, key, toCached(answer)) };
        }
        const forward = () =>
          proxy.forward(req, res, next, {
            target,
            serviceName: upstream,
            strip: CREDENTIAL_HEADERS,
            set: sign(principal),
            // Downloads: metadata checks the caller and names the object, the gateway streams it from the store.
            accel: upstream === 'metadata' && req.method === 'GET',
            ...(onAnswer ? { onAnswer } : {}),
          });
        // A POST with an Idempotency-Key runs once per group, user and key; repeats get the kept answer.
        if (req.method === 'POST') idempotent(idempotency, `${principal.group_id}:${callerKey(principal)}`, req, res, forward).catch(next);
        else forward();
      } catch (e) {
        next(e);
      }
    });
  };
  app.use(openApiRoutes()); // public, served here: before the route table
  app.use(
    consoleRoutes({
      publicUploadUrl: 'http://127.0.0.1:8081',
      publicCdnUrl: 'http://127.0.0.1:8082',
      ...deps.console,
    }),
  );
  app.use(route);
  return { app: finishApp(app, deps.logger), close: proxy.close };
}
