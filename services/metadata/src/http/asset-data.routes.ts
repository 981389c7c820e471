import { Router } from 'express';
import { z } from 'zod';
import { principalOf, readsOwnOnly } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import { assetNotFound } from '../domain/asset.errors';
import { findReadableAsset, getAssetData } from '../use-cases/read-asset.use-case';
import type { AssetReader } from '../domain/ports';
import { PHASH_PATTERN } from '../domain/near-duplicates';

/** An asset id in a path: one of no asset's form is an unknown asset (404), like any other (CONTRACT §16). */
export const assetIdParam = pathId(z.string().min(1).max(64), assetNotFound);

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const assetDataSchemas = { params: z.object({ id: assetIdParam }) };
export const similarSchemas = { params: assetDataSchemas.params, query: z.object({ max_distance: z.coerce.number().int().min(0).max(32).default(8) }) };

/** Endpoint 11, Get Data: the record in any status (clients poll NOT_READY until OK). */
export function assetDataRoutes(reader: AssetReader): Router {
  const router = Router();
  router.get('/api/v1/assets/:id/data', validate(assetDataSchemas), async (req, res) => {
    const { params } = parsed(assetDataSchemas, req, res);
    res.json(await getAssetData(reader, principalOf(res), params.id));
  });

  // CONTRACT §14 near-duplicates: assets whose perceptual hash is within `max_distance` bits, nearest first.
  router.get('/api/v1/assets/:id/similar', validate(similarSchemas), async (req, res) => {
    const { params, query } = parsed(similarSchemas, req, res);
    const caller = principalOf(res);
    const asset = await findReadableAsset(reader, caller, params.id);
    const phash = typeof asset.metadata.phash === 'string' && PHASH_PATTERN.test(asset.metadata.phash) ? asset.metadata.phash : undefined;
    // No hash yet (not an image, or not processed): nothing can be compared.
    const items = phash
      ? await reader.similar(caller.group_id, asset.id, phash, query.max_distance, 50, readsOwnOnly(caller) ? caller.user_id : undefined)
      : [];
    res.json({ items });
  });
  return router;
}
