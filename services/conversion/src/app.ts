import type { Express } from 'express';
import type { ServiceVerifier } from '@dam/auth-tokens';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import { transformRoutes } from './http/transform.routes';
import type { transformer } from './use-cases/transform.use-case';

/** Health, and on-demand transforms for metadata; the conversions themselves come as jobs. */
export function buildConversionApp(deps: {
  logger: Logger;
  readiness: ReadinessCheck;
  verifier: ServiceVerifier;
  transform: ReturnType<typeof transformer>;
}): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  app.all('/internal/v1/transforms', deps.verifier.guard({ callers: ['metadata'], principal: 'none' }));
  app.use('/internal', deps.verifier.onlyGuarded);
  app.use(transformRoutes(deps.transform));
  return finishApp(app, deps.logger);
}
