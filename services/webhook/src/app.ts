import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dam/http';
import type { Logger } from '@dam/logging';

/** Health endpoints only: the webhook routes are not built yet. */
export function buildWebhookApp(deps: { logger: Logger }): Express {
  const app = createHttpApp({ logger: deps.logger });
  return finishApp(app, deps.logger);
}
