import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import type { GroupSettings } from '@dam/internal-api';
import { addonNotFound, addonResultOf, requestAddon } from '../use-cases/addons.use-case';
import type { AssetReader, RunInTransaction } from '../domain/ports';
import { findReadableAsset } from '../use-cases/read-asset.use-case';
import { assetIdParam } from './asset-data.routes';

/** CONTRACT §6 addons: a run (RUN_JOBS, checked at the gateway) → 202 `{job_id, status}`; the result (READ). */
export interface AddonRouteDeps {
  transactions: RunInTransaction;
  reader: AssetReader;
  settings: { get(groupId: string): Promise<GroupSettings> };
  /** Why an addon's model cannot run (the addon service says it failed to load): its run answers 503. */
  addonUnavailable?: (addon: string) => Promise<string | undefined>;
}

/** An addon name of no addon's form is an unknown addon: 404, as any unknown name (CONTRACT §16). */
const addonParams = z.object({ id: assetIdParam, addon: pathId(z.string().min(1).max(64), () => addonNotFound('of that name')) });
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const addonRunSchemas = { params: addonParams, body: z.object({ options: z.record(z.string(), z.unknown()).optional() }).optional() };
export const addonReadSchemas = { params: addonParams };

export function addonRoutes(deps: AddonRouteDeps): Router {
  const router = Router();
  router.post('/api/v1/assets/:id/addons/:addon', validate(addonRunSchemas), async (req, res) => {
    const { params: p } = parsed(addonRunSchemas, req, res);
    const job = await requestAddon(deps.transactions, principalOf(res), p.id, p.addon, (g) => deps.settings.get(String(g)), deps.addonUnavailable);
    res.status(202).json({ job_id: job.id, status: job.status });
  });
  router.get('/api/v1/assets/:id/addons/:addon', validate(addonReadSchemas), async (req, res) => {
    const { params: p } = parsed(addonReadSchemas, req, res);
    const asset = await findReadableAsset(deps.reader, principalOf(res), p.id);
    res.json(addonResultOf(asset, p.addon));
  });
  return router;
}
