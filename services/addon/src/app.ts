import type { Express } from 'express';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { AddonState } from '@dam/events';
import type { Logger } from '@dam/logging';

/**
 * Health endpoints: addon work arrives as jobs (metadata opens them; results go back in the job reports). `/readyz`
 * also names each addon's state (`models`: loading, ready or failed with the reason), which does not decide readiness.
 */
export function buildAddonApp(deps: { logger: Logger; readiness?: ReadinessCheck; models?: () => Record<string, AddonState> }): Express {
  const models = deps.models;
  const app = createHttpApp({
    logger: deps.logger,
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    ...(models ? { readinessDetails: () => ({ models: models() }) } : {}),
  });
  return finishApp(app, deps.logger);
}
