import type { Express } from 'express';
import { requirePrincipal } from '@dam/auth-tokens';
import type { Pool } from '@dam/db';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { AssetRepository } from './adapters/asset.repository';
import { pgTransactions } from './adapters/transaction';
import { assetDataRoutes } from './http/asset-data.routes';
import { downloadRoutes } from './http/download.routes';
import { internalAssetExistsRoutes } from './http/internal-asset-exists.routes';
import { internalAssetsRoutes } from './http/internal-assets.routes';

export interface MetadataAppDeps {
  logger: Logger;
  pool: Pool;
  storage: Storage;
  internalSecret: string;
  readiness?: ReadinessCheck;
}

/** Builds the HTTP app from its dependencies; never listens (main.ts and tests do). */
export function buildMetadataApp(deps: MetadataAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  const reader = new AssetRepository(deps.pool);
  // Every route here sits behind an edge (gateway or upload) that signs the principal header.
  const principal = requirePrincipal(deps.internalSecret);
  app.use('/internal', principal);
  app.use('/api', principal);
  app.use(internalAssetsRoutes(pgTransactions(deps.pool)));
  app.use(internalAssetExistsRoutes(reader));
  app.use(assetDataRoutes(reader));
  app.use(downloadRoutes(reader, deps.storage, deps.logger));
  return finishApp(app, deps.logger);
}
