import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import { getAssetData } from '../domain/read-asset.use-case';
import type { AssetReader } from '../domain/ports';

export const assetIdParam = z.string().min(1).max(64);

/** Endpoint 11, Get Data: the record in any status (clients poll NOT_READY until OK). */
export function assetDataRoutes(reader: AssetReader): Router {
  const router = Router();
  const schemas = { params: z.object({ id: assetIdParam }) };
  router.get('/api/v1/assets/:id/data', validate(schemas), async (req, res) => {
    const { params } = parsed(schemas, req, res);
    res.json(await getAssetData(reader, principalOf(res), params.id));
  });
  return router;
}
