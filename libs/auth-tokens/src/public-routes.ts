import type { RequestHandler } from 'express';
import { notFound } from '@dam/errors';
import { PERMISSION as P } from './roles';
import { requireAny } from './principal';
import { principalOf } from './principal-claims';

/** Services the gateway forwards public routes to; each has a `<NAME>_URL` in the gateway's config. */
export type Upstream = 'auth' | 'metadata' | 'search' | 'link-signing' | 'webhook';

export interface RouteRule {
  methods: readonly string[];
  /** `/`-separated; `:name` matches one segment, a trailing `**` one or more. */
  pattern: string;
  upstream: Upstream;
  /** The caller needs at least one of these tokens; empty = any authenticated caller. */
  anyOf: readonly string[];
  /** Reached without credentials (login, validate). */
  public?: boolean;
}

const READ = [P.READ_ASSET, P.READ_OWN_ASSET];
const EDIT = [P.EDIT_ASSET, P.EDIT_OWN_ASSET];
const DELETE = [P.DELETE_ASSET, P.DELETE_OWN_ASSET];
const ANY: readonly string[] = [];
const GET = ['GET', 'HEAD'];

/**
 * The public API's routes: which service owns each and the permission it needs. First match wins, so specific
 * paths come before the patterns that would also match them. The gateway routes and checks the coarse permission
 * on this table, and each owning service checks it again on the same table (`requireRoutePermission`), so no route
 * is protected by the gateway alone; the owning service also checks ownership (`*_OWN_*`) and group scoping.
 */
export const ROUTES: readonly RouteRule[] = [
  { methods: ['POST'], pattern: '/api/v1/login', upstream: 'auth', anyOf: ANY, public: true },
  { methods: ['GET', 'POST'], pattern: '/api/v1/auth/validate', upstream: 'auth', anyOf: ANY, public: true },

  // auth: identity and settings
  { methods: GET, pattern: '/api/v1/users/me', upstream: 'auth', anyOf: ANY },
  { methods: ['PATCH'], pattern: '/api/v1/users/me/preferences', upstream: 'auth', anyOf: ANY },
  // A new accessID for one's signed links; another user's needs MANAGE_USERS (auth checks "self or MANAGE_USERS").
  { methods: ['POST'], pattern: '/api/v1/users/me/access_id', upstream: 'auth', anyOf: ANY },
  // A new upload key for oneself (CONTRACT §12).
  { methods: ['POST'], pattern: '/api/v1/users/me/uploadkey', upstream: 'auth', anyOf: ANY },
  { methods: ['POST'], pattern: '/api/v1/users/:user_id/access_id', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  { methods: ['GET', 'HEAD', 'POST'], pattern: '/api/v1/users', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  // Reading one's own record needs no token; auth checks "self or MANAGE_USERS".
  { methods: GET, pattern: '/api/v1/users/:user_id', upstream: 'auth', anyOf: ANY },
  { methods: ['PATCH', 'DELETE'], pattern: '/api/v1/users/:user_id', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  { methods: ['POST'], pattern: '/api/v1/groups', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  { methods: ['GET', 'HEAD', 'POST'], pattern: '/api/v1/api_keys', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  { methods: ['DELETE'], pattern: '/api/v1/api_keys/:key_id', upstream: 'auth', anyOf: [P.MANAGE_USERS] },
  { methods: ['GET', 'HEAD', 'PATCH'], pattern: '/api/v1/settings', upstream: 'auth', anyOf: [P.MANAGE_SETTINGS] },
  { methods: GET, pattern: '/api/v1/usage/:metric', upstream: 'auth', anyOf: [P.VIEW_USAGE] },

  // metadata: assets (spec endpoints 5-15 and CONTRACT §4-§6)
  // search and links (CONTRACT §7, §8), before the generic asset patterns below
  { methods: ['POST'], pattern: '/api/v1/assets/search', upstream: 'search', anyOf: READ },
  { methods: GET, pattern: '/api/v1/assets/search/:search_result_id/:page', upstream: 'search', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/search', upstream: 'search', anyOf: READ },
  { methods: GET, pattern: '/api/v1/search/:search_result_id/:page', upstream: 'search', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/assets/get_link', upstream: 'link-signing', anyOf: READ },
  { methods: GET, pattern: '/api/v1/assets/:id/get_link', upstream: 'link-signing', anyOf: READ },

  { methods: ['DELETE'], pattern: '/api/v1/assets/trash/purge', upstream: 'metadata', anyOf: [P.PURGE_TRASH] },
  { methods: ['POST'], pattern: '/api/v1/assets/trash/:id/undelete', upstream: 'metadata', anyOf: DELETE },
  { methods: ['POST'], pattern: '/api/v1/assets/bulk/delete', upstream: 'metadata', anyOf: DELETE },
  { methods: GET, pattern: '/api/v1/assets/:id/data', upstream: 'metadata', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/assets/:id/data/update', upstream: 'metadata', anyOf: EDIT },
  { methods: ['POST'], pattern: '/api/v1/assets/:id/delete', upstream: 'metadata', anyOf: DELETE },
  { methods: GET, pattern: '/api/v1/assets/:id/content/:key/download', upstream: 'metadata', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/assets/:id/content/set_public_access', upstream: 'metadata', anyOf: EDIT },
  // Multi-file conversions below their key (deepzoom tiles, HLS playlists and segments).
  { methods: GET, pattern: '/api/v1/assets/:id/content/:key/**', upstream: 'metadata', anyOf: READ },
  { methods: ['POST', 'DELETE'], pattern: '/api/v1/assets/:id/content/:name', upstream: 'metadata', anyOf: EDIT },
  { methods: GET, pattern: '/api/v1/assets/:id/conversions/:key', upstream: 'metadata', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/assets/:id/process', upstream: 'metadata', anyOf: [P.RUN_JOBS] },
  { methods: ['POST'], pattern: '/api/v1/assets/:id/addons/:addon', upstream: 'metadata', anyOf: [P.RUN_JOBS] },
  { methods: GET, pattern: '/api/v1/assets/:id/addons/:addon', upstream: 'metadata', anyOf: READ },
  // Any other asset path: reads need a read token, changes an edit token.
  { methods: GET, pattern: '/api/v1/assets/**', upstream: 'metadata', anyOf: READ },
  { methods: ['POST', 'PUT', 'PATCH', 'DELETE'], pattern: '/api/v1/assets/**', upstream: 'metadata', anyOf: EDIT },

  // metadata: schemas, collections, jobs (CONTRACT §5, §6, §9)
  { methods: GET, pattern: '/api/v1/schemas', upstream: 'metadata', anyOf: ANY },
  { methods: GET, pattern: '/api/v1/schemas/:schema_id', upstream: 'metadata', anyOf: ANY },
  { methods: ['POST'], pattern: '/api/v1/schemas', upstream: 'metadata', anyOf: [P.MANAGE_SCHEMAS] },
  { methods: ['PUT'], pattern: '/api/v1/schemas/:schema_id', upstream: 'metadata', anyOf: [P.MANAGE_SCHEMAS] },
  // Seeing collections needs no token (a CREATOR sees only its own assets in them); changing them MANAGE_COLLECTIONS.
  { methods: GET, pattern: '/api/v1/collections', upstream: 'metadata', anyOf: ANY },
  { methods: ['POST'], pattern: '/api/v1/collections', upstream: 'metadata', anyOf: [P.MANAGE_COLLECTIONS] },
  { methods: GET, pattern: '/api/v1/collections/:collection_id', upstream: 'metadata', anyOf: ANY },
  { methods: ['PATCH', 'DELETE'], pattern: '/api/v1/collections/:collection_id', upstream: 'metadata', anyOf: [P.MANAGE_COLLECTIONS] },
  { methods: ['POST', 'DELETE'], pattern: '/api/v1/collections/:collection_id/assets', upstream: 'metadata', anyOf: [P.MANAGE_COLLECTIONS] },
  // CDN prefetch and purge (CONTRACT §7): jobs (metadata) that link-signing runs against its byte cache.
  { methods: ['POST'], pattern: '/api/v1/cdn/prefetch', upstream: 'metadata', anyOf: READ },
  { methods: ['POST'], pattern: '/api/v1/cdn/purge', upstream: 'metadata', anyOf: EDIT },
  // Webhooks (spec endpoint 18, CONTRACT §10): reissue is a job (metadata) for an ASSET_ADMIN API key only; the
  // delivery log shows URLs and answers, as settings do.
  { methods: ['POST'], pattern: '/api/v1/callbacks/reissue', upstream: 'metadata', anyOf: [P.REISSUE_CALLBACKS] },
  { methods: GET, pattern: '/api/v1/webhooks/deliveries', upstream: 'webhook', anyOf: [P.MANAGE_SETTINGS] },
  { methods: GET, pattern: '/api/v1/jobs', upstream: 'metadata', anyOf: ANY },
  { methods: GET, pattern: '/api/v1/jobs/:job_id', upstream: 'metadata', anyOf: ANY },
  // Delete - Bulk's data export: to whoever may see the job (metadata checks the job's visibility).
  { methods: GET, pattern: '/api/v1/jobs/:job_id/export', upstream: 'metadata', anyOf: ANY },
];

export interface RouteMatch {
  rule: RouteRule;
  params: Record<string, string>;
}

function matchPattern(pattern: string, segments: string[]): Record<string, string> | undefined {
  const parts = pattern.split('/').filter(Boolean);
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 1) {
    const part = parts[i] as string;
    if (part === '**') return i < segments.length ? params : undefined;
    const seg = segments[i];
    if (seg === undefined) return undefined;
    if (part.startsWith(':')) params[part.slice(1)] = seg;
    else if (part !== seg) return undefined;
  }
  return parts.length === segments.length ? params : undefined;
}

/**
 * Splits a request path into segments, refusing what could make the gateway and the service behind it
 * disagree about the path: empty segments, dot segments and encoded slashes or dots.
 */
export function pathSegments(path: string): string[] | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments = path.slice(1).replace(/\/$/, '').split('/');
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..' || /%2f|%5c|%2e/i.test(s)) return undefined;
  }
  return segments;
}

/** The rule for a request, or undefined (the gateway answers 404). */
export function resolveRoute(method: string, path: string, routes: readonly RouteRule[] = ROUTES): RouteMatch | undefined {
  const segments = pathSegments(path);
  if (!segments) return undefined;
  const m = method.toUpperCase();
  for (const rule of routes) {
    if (!rule.methods.includes(m)) continue;
    const params = matchPattern(rule.pattern, segments);
    if (params) return { rule, params };
  }
  return undefined;
}

/**
 * Mounted by each service that owns public routes, after its service-token guard: the principal the gateway
 * forwarded must hold the permission the table names for the route, here as at the gateway (F3 of the security
 * review: a request that reaches the service on a path other than the one the gateway authorized, or a route
 * whose check lived at the gateway only, is refused here). A path of the public API that the table does not give
 * to this service answers 404, as the gateway would.
 */
export function requireRoutePermission(service: Upstream, routes: readonly RouteRule[] = ROUTES): RequestHandler {
  return (req, res, next) => {
    // The full path, whatever the middleware is mounted under.
    const path = req.originalUrl.split('?')[0] ?? '';
    if (!path.startsWith('/api/')) {
      next();
      return;
    }
    const match = resolveRoute(req.method, path, routes);
    try {
      if (!match || match.rule.upstream !== service) throw notFound('ROUTE_NOT_FOUND', `No route for ${req.method} ${path}`);
      // Login and validate carry no principal; their own guard let them in.
      if (!match.rule.public) requireAny(principalOf(res), match.rule.anyOf);
      next();
    } catch (err) {
      next(err);
    }
  };
}
