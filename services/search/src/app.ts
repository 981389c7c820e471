import type { Express } from 'express';
import { requireRoutePermission, type ServiceVerifier } from '@dam/auth-tokens';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import { searchRoutes, type SearchRouteDeps } from './http/search.routes';

export interface SearchAppDeps extends SearchRouteDeps {
  logger: Logger;
  verifier: ServiceVerifier;
  readiness?: ReadinessCheck;
}

/** Search over the read model, reached only through the gateway (a user's request with its service token). */
export function buildSearchApp(deps: SearchAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, ...(deps.readiness ? { readiness: deps.readiness } : {}) });
  app.use('/api', deps.verifier.guard({ callers: ['gateway'], principal: 'required' }));
  app.use(['/api', '/internal'], deps.verifier.onlyGuarded);
  app.use('/api', requireRoutePermission('search'));
  app.use(searchRoutes(deps));
  return finishApp(app, deps.logger);
}
