import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { Storage } from '@dam/storage';
import type { PublicCopySync } from '../adapters/public-object.repository';
import type { RunInTransaction } from '../domain/ports';
import { setPublicAccess } from '../use-cases/public-access.use-case';
import { assetIdParam } from './asset-data.routes';

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const publicAccessSchemas = {
  params: z.object({ id: assetIdParam }),
  body: z.object({ keys: z.array(z.string().min(1).max(100)).min(1).max(100) }),
};

/**
 * Endpoint 10, Set Public Access; answers once the keys' copies are made under the public prefix (the URLs work at
 * once). A copy that fails answers the store's error; the key stays published and the public-copies poller copies it.
 */
export function publicAccessRoutes(deps: { transactions: RunInTransaction; storage: Storage; syncPolicy: PublicCopySync }): Router {
  const router = Router();
  router.post('/api/v1/assets/:id/content/set_public_access', validate(publicAccessSchemas), async (req, res) => {
    const { params, body } = parsed(publicAccessSchemas, req, res);
    const caller = principalOf(res);
    const result = await setPublicAccess(deps.transactions, caller, params.id, body.keys, (key) => deps.storage.publicUrl(key));
    await deps.syncPolicy({ groupId: caller.group_id, assetId: params.id });
    res.json(result);
  });
  return router;
}
