import type { Express } from 'express';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';

/** Health endpoints: addon work arrives as jobs (metadata opens them; results go back in the job reports). */
export function buildAddonApp(deps: { logger: Logger; readiness?: ReadinessCheck }): Express {
  const app = createHttpApp({ logger: deps.logger, ...(deps.readiness ? { readiness: deps.readiness } : {}) });
  return finishApp(app, deps.logger);
}
