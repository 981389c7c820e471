import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { RunInTransaction } from '../domain/ports';
import { parseUpdateData, updateData } from '../use-cases/update-data.use-case';
import { assetIdParam } from './asset-data.routes';

/** Request params and query as validated; the body is `parseUpdateData`'s (exported for the OpenAPI agreement test in services/gateway/test). */
export const dataUpdateSchemas = {
  params: z.object({ id: assetIdParam }),
  query: z.object({ async: z.enum(['0', '1']).default('0') }),
};

/** Endpoint 12, Update Data: 200 with the asset when applied now, 202 when queued (another update in flight, or `async=1`). */
export function dataUpdateRoutes(transactions: RunInTransaction): Router {
  const router = Router();
  router.post('/api/v1/assets/:id/data/update', validate(dataUpdateSchemas), async (req, res) => {
    const { params, query } = parsed(dataUpdateSchemas, req, res);
    const change = parseUpdateData(req.body);
    const result = await updateData(transactions, principalOf(res), params.id, change, query.async === '1');
    if ('applied' in result) res.status(200).json(result.applied);
    else res.status(202).json(result.queued);
  });
  return router;
}
