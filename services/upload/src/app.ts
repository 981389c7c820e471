import type { Express, RequestHandler } from 'express';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { MetadataClient } from './adapters/metadata.client';
import type { PendingJournal } from './adapters/pending-upload.journal';
import { uploadRoutes } from './http/upload.routes';

export interface UploadAppDeps {
  logger: Logger;
  storage: Storage;
  metadata: MetadataClient;
  journal: PendingJournal;
  authenticate: RequestHandler;
  maxUploadBytes: number;
  readiness?: ReadinessCheck;
}

/** Builds the HTTP app from its dependencies; never listens (main.ts and tests do). */
export function buildUploadApp(deps: UploadAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  app.use(uploadRoutes(
      { storage: deps.storage, metadata: deps.metadata, journal: deps.journal, maxUploadBytes: deps.maxUploadBytes, logger: deps.logger },
      deps.authenticate,
    ),);
  return finishApp(app, deps.logger);
}
