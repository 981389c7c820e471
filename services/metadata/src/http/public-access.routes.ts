import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { Storage } from '@dam/storage';
import type { RunInTransaction } from '../domain/ports';
import { setPublicAccess } from '../use-cases/public-access.use-case';
import { assetIdParam } from './asset-data.routes';

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const publicAccessSchemas = {
  params: z.object({ id: assetIdParam }),
  body: z.object({ keys: z.array(z.string().min(1).max(100)).min(1).max(100) }),
};

/** Endpoint 10, Set Public Access; answers once the bucket policy names the objects (the URLs work at once). */
export function publicAccessRoutes(deps: { transactions: RunInTransaction; storage: Storage; syncPolicy: () => Promise<unknown> }): Router {
  const router = Router();
  router.post('/api/v1/assets/:id/content/set_public_access', validate(publicAccessSchemas), async (req, res) => {
    const { params, body } = parsed(publicAccessSchemas, req, res);
    const result = await setPublicAccess(deps.transactions, principalOf(res), params.id, body.keys, (key) => deps.storage.publicUrl(key));
    await deps.syncPolicy();
    res.json(result);
  });
  return router;
}
