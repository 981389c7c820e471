import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { AssetReader } from '../domain/ports';

const existsBody = z.object({
  ids: z.array(z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters')).min(1).max(1000),
});

/**
 * Called by upload's orphan reaper (principal header of the uploader): which of these ids of the principal's
 * group have a record, deleted ones included, so an object of a registered asset is never taken for an orphan.
 */
export function internalAssetExistsRoutes(reader: AssetReader): Router {
  const router = Router();
  const schemas = { body: existsBody };
  router.post('/internal/v1/assets/exists', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    const groupId = principalOf(res).group_id;
    const existing: string[] = [];
    for (const id of new Set(body.ids)) if (await reader.findById(groupId, id)) existing.push(id);
    res.status(200).json({ existing });
  });
  return router;
}
