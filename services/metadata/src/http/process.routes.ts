import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { GroupSettings } from '@dam/internal-api';
import type { RunInTransaction } from '../domain/ports';
import { requestProcessing } from '../use-cases/process.use-case';
import { assetIdParam } from './asset-data.routes';

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const processSchemas = { params: z.object({ id: assetIdParam }), body: z.object({ keys: z.array(z.string().min(1).max(100)).min(1).max(50) }) };

/** CONTRACT §6 `process` (RUN_JOBS, checked at the gateway): 202 `{job_id, status}`. */
export function processRoutes(deps: { transactions: RunInTransaction; settings: { get(groupId: string): Promise<GroupSettings> } }): Router {
  const router = Router();
  router.post('/api/v1/assets/:id/process', validate(processSchemas), async (req, res) => {
    const { params, body } = parsed(processSchemas, req, res);
    const job = await requestProcessing(deps.transactions, principalOf(res), params.id, body.keys, (g) => deps.settings.get(String(g)));
    res.status(202).json({ job_id: job.id, status: job.status });
  });
  return router;
}
