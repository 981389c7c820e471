import type { Express } from 'express';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';

/** Health and metrics only: transcode works on job commands from NATS, not on requests. */
export function buildTranscodeApp(deps: { logger: Logger; readiness?: ReadinessCheck }): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  return finishApp(app, deps.logger);
}
