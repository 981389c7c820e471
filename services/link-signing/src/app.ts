import type { Express } from 'express';
import type { ServiceVerifier } from '@dam/auth-tokens';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import { edgeRoutes, type EdgeDeps } from './http/edge.routes';
import { linkRoutes } from './http/links.routes';

export interface LinkSigningAppDeps extends EdgeDeps {
  verifier: ServiceVerifier;
  readiness?: ReadinessCheck;
}

/**
 * Two faces: Get Link behind the gateway (a user's request, with its service token), and `{cdn}`, the edge that
 * anyone holding a signed link reaches directly (the link is the credential).
 */
export function buildLinkSigningApp(deps: LinkSigningAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, ...(deps.readiness ? { readiness: deps.readiness } : {}) });
  const { guard } = deps.verifier;
  app.all(['/api/v1/assets/get_link', '/api/v1/assets/:id/get_link'], guard({ callers: ['gateway'], principal: 'required' }));
  app.use(['/api/v1/assets', '/internal'], deps.verifier.onlyGuarded);
  app.use(linkRoutes(deps));
  app.use(edgeRoutes(deps));
  return finishApp(app, deps.logger);
}
