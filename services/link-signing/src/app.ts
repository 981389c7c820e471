import type { Express, RequestHandler } from 'express';
import { requireRoutePermission, type ServiceVerifier } from '@dam/auth-tokens';
import { createEdgeLimits, createHttpApp, finishApp, type Budget, type ReadinessCheck, type ReplicaCount, type TrustProxy } from '@dam/http';
import { sharedLookups } from './adapters/shared-lookups';
import { cors, EDGE_PREFIX, edgeRoutes, type EdgeDeps } from './http/edge.routes';
import { linkRoutes } from './http/links.routes';

export interface LinkSigningAppDeps extends EdgeDeps {
  verifier: ServiceVerifier;
  readiness?: ReadinessCheck;
  /** `{cdn}`'s budget per client address (CDN_RATE_LIMIT_ADDRESS_*); none when absent or 0 per minute. */
  edgeLimit?: Budget;
  /** Over how many replicas `edgeLimit` is spread (each admits its share); 1 when absent. */
  edgeReplicas?: ReplicaCount;
  /** How long the edge reuses auth's answer about an accessID (CDN_ACCESS_CACHE_TTL_MS); default 5 s. */
  accessCacheTtlMs?: number;
  /** Proxies whose X-Forwarded-For decides `req.ip` (the per-address budget). Defaults to env TRUST_PROXY (none). */
  trustProxy?: TrustProxy;
}

export const DEFAULT_ACCESS_CACHE_TTL_MS = 5000;

/**
 * Two faces: Get Link behind the gateway (a user's request, with its service token), and `{cdn}`, the edge that
 * anyone holding a signed link reaches directly (the link is the credential).
 */
export function buildLinkSigningApp(deps: LinkSigningAppDeps): Express {
  const app = createHttpApp({
    logger: deps.logger,
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    ...(deps.trustProxy !== undefined ? { trustProxy: deps.trustProxy } : {}),
  });
  const { guard } = deps.verifier;
  app.all(['/api/v1/assets/get_link', '/api/v1/assets/:id/get_link'], guard({ callers: ['gateway'], principal: 'required' }));
  app.use(['/api/v1/assets', '/internal'], deps.verifier.onlyGuarded);
  app.use('/api/v1/assets', requireRoutePermission('link-signing'));
  app.use(linkRoutes(deps));
  // The edge is public and each valid link's hit asks auth and metadata (security review F13): a budget per client
  // address before anything is checked, and the lookups of one link shared by its requests.
  const limits = createEdgeLimits(deps.edgeLimit ? { perAddress: deps.edgeLimit, ...(deps.edgeReplicas ? { replicas: deps.edgeReplicas } : {}) } : {});
  const edgeLimit: RequestHandler = (req, res, next) => {
    cors(res); // a 429 a script cannot read (no CORS header) would leave a player without its Retry-After
    limits.beforeAuth(req, res, next);
  };
  app.use(EDGE_PREFIX, edgeLimit);
  app.use(
    edgeRoutes({
      ...deps,
      clients: sharedLookups(deps.clients, { accessTtlMs: deps.accessCacheTtlMs ?? DEFAULT_ACCESS_CACHE_TTL_MS, ...(deps.now ? { now: deps.now } : {}) }),
    }),
  );
  return finishApp(app, deps.logger);
}
