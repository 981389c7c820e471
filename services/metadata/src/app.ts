import type { Express } from 'express';
import { requireRoutePermission, type ServiceVerifier } from '@dam/auth-tokens';
import type { Pool } from '@dam/db';
import { createHttpApp, finishApp, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { AssetRepository } from './adapters/asset.repository';
import { JobRepository } from './adapters/job.repository';
import { pgTransactions } from './adapters/transaction';
import type { JobTimings } from './domain/job';
import type { TransformCall } from './domain/ports';
import { assetDataRoutes } from './http/asset-data.routes';
import { answerWritesAfter } from './http/write-answers';
import { publicPolicySync, type PublicCopySync } from './adapters/public-object.repository';
import { conversionRoutes } from './http/conversions.routes';
import { dataUpdateRoutes } from './http/data-update.routes';
import { processRoutes } from './http/process.routes';
import { schemaRoutes } from './http/schemas.routes';
import { collectionRoutes } from './http/collections.routes';
import { reissueRoutes } from './http/reissue.routes';
import { addonRoutes, type AddonRouteDeps } from './http/addons.routes';
import { publicAccessRoutes } from './http/public-access.routes';
import { internalDeliveryRoutes } from './http/internal-delivery.routes';
import { cdnJobRoutes } from './http/cdn-jobs.routes';
import { downloadRoutes } from './http/download.routes';
import { jobRoutes } from './http/jobs.routes';
import { bulkDeleteExports } from './adapters/bulk-delete-export.store';
import { trashRoutes, type TrashRouteDeps } from './http/trash.routes';
import { internalAssetExistsRoutes, internalAssetSourceRoutes } from './http/internal-asset-exists.routes';
import { internalAssetsRoutes, internalIngestRoutes, internalReplaceRoutes } from './http/internal-assets.routes';
import { autoAddonsPlanner } from './use-cases/addons.use-case';

export interface MetadataAppDeps {
  logger: Logger;
  pool: Pool;
  storage: Storage;
  /** Checks the token of every calling service; the routes below name which services may call them. */
  verifier: ServiceVerifier;
  readiness?: ReadinessCheck;
  /** Deadlines of the jobs that requests open (defaults: DEFAULT_JOB_TIMINGS). */
  jobTimings?: JobTimings;
  /** How long a replaced original stays readable for downloads already streaming it. */
  replacedOriginalGraceMs?: number;
  /** Makes Set Public Access's copies and keeps the public prefix's policy (one shared with the poller). */
  syncPublicPolicy?: PublicCopySync;
  /** On-demand image transforms (the conversion service); without it they answer 503. */
  transforms?: TransformCall;
  /** Largest file Add Conversion accepts (MAX_UPLOAD_BYTES). */
  maxUploadBytes?: number;
  /** Group settings from auth (bulk delete limits). */
  groupSettings: TrashRouteDeps['settings'];
  /** Whether an addon's model failed to load (asked of the addon service); without it, runs are always queued. */
  addonUnavailable?: AddonRouteDeps['addonUnavailable'];
  /** What a write's answer waits for: the notices of the assets it changed sent to the gateways (see AssetChangeNotices). */
  noticesSettled?: () => Promise<void>;
}

/** Builds the HTTP app from its dependencies; never listens (main.ts and tests do). */
export function buildMetadataApp(deps: MetadataAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness });
  const reader = new AssetRepository(deps.pool);
  // Every route acts for a user and is reached from an edge that authenticated them: the public API only
  // through the gateway, the registration of stored originals only from upload.
  const { guard } = deps.verifier;
  if (deps.noticesSettled) app.use(answerWritesAfter(deps.noticesSettled));
  app.all('/internal/v1/assets', guard({ callers: ['upload'], principal: 'required' }));
  app.all(
    ['/internal/v1/assets/ingest', '/internal/v1/assets/:id/replaceable', '/internal/v1/assets/:id/original'],
    guard({ callers: ['upload'], principal: 'required' }),
  );
  // upload's orphan reaper, and auth checking a watermark asset in a settings change.
  app.all('/internal/v1/assets/exists', guard({ callers: ['upload', 'auth'], principal: 'required' }));
  // transcode reading the group's watermark image.
  app.all('/internal/v1/groups/:group_id/assets/:id/source', guard({ callers: ['transcode'], principal: 'none' }));
  // link-signing, for the user a link is signed for (get_link and every delivery at the edge).
  app.all('/internal/v1/assets/delivery', guard({ callers: ['link-signing'], principal: 'required' }));
  app.use('/api', guard({ callers: ['gateway'], principal: 'required' }));
  app.use(['/api', '/internal'], deps.verifier.onlyGuarded);
  // The permission of each public route, checked here again on the gateway's own table.
  app.use('/api', requireRoutePermission('metadata'));
  const transactions = pgTransactions(deps.pool, deps.jobTimings);
  // The group's automatic addons open with an original's processing (CONTRACT §16).
  const autoAddons = autoAddonsPlanner((g) => deps.groupSettings.get(String(g)), deps.addonUnavailable);
  app.use(internalAssetsRoutes(transactions, autoAddons));
  app.use(internalReplaceRoutes(transactions, deps.replacedOriginalGraceMs, autoAddons));
  app.use(internalIngestRoutes(transactions));
  app.use(internalAssetExistsRoutes(reader));
  app.use(internalAssetSourceRoutes(reader));
  app.use(internalDeliveryRoutes(reader, { storage: deps.storage, ...(deps.transforms ? { transforms: deps.transforms } : {}) }));
  app.use(assetDataRoutes(reader));
  app.use(downloadRoutes(reader, deps.storage, deps.logger, deps.transforms));
  app.use(jobRoutes(new JobRepository(deps.pool), bulkDeleteExports(deps.storage)));
  app.use(trashRoutes({ transactions, settings: deps.groupSettings }));
  app.use(dataUpdateRoutes(transactions));
  app.use(cdnJobRoutes(transactions));
  app.use(processRoutes({ transactions, settings: deps.groupSettings }));
  app.use(addonRoutes({ transactions, reader, settings: deps.groupSettings, ...(deps.addonUnavailable ? { addonUnavailable: deps.addonUnavailable } : {}) }));
  app.use(schemaRoutes(transactions));
  app.use(collectionRoutes(transactions));
  app.use(reissueRoutes(transactions));
  // Before Add Conversion, whose `/content/:name` would take "set_public_access" for a name.
  app.use(publicAccessRoutes({ transactions, storage: deps.storage, syncPolicy: deps.syncPublicPolicy ?? publicPolicySync(deps.pool, deps.storage) }));
  app.use(conversionRoutes({ transactions, storage: deps.storage, logger: deps.logger, maxBytes: deps.maxUploadBytes ?? 5 * 1024 ** 3 }));
  return finishApp(app, deps.logger);
}
