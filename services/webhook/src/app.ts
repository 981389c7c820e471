import type { Express } from 'express';
import { requireRoutePermission, type ServiceVerifier } from '@dam/auth-tokens';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { DeliveryStore } from './domain/ports';
import { deliveryRoutes } from './http/deliveries.routes';

export interface WebhookAppDeps {
  logger: Logger;
  verifier: ServiceVerifier;
  repo: Pick<DeliveryStore, 'log'>;
  readiness?: ReadinessCheck;
}

/** The delivery log, reached only through the gateway (a user's request with its service token). */
export function buildWebhookApp(deps: WebhookAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, ...(deps.readiness ? { readiness: deps.readiness } : {}) });
  app.use('/api', deps.verifier.guard({ callers: ['gateway'], principal: 'required' }));
  app.use(['/api', '/internal'], deps.verifier.onlyGuarded);
  app.use('/api', requireRoutePermission('webhook'));
  app.use(deliveryRoutes(deps.repo));
  return finishApp(app, deps.logger);
}
