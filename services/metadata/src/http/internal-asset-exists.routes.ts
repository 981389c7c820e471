import { Router } from 'express';
import { principalOf } from '@dam/auth-tokens';
import { assetsExistRequest } from '@dam/internal-api';
import { parsed, validate } from '@dam/http';
import type { AssetReader } from '../domain/ports';

/**
 * Called by upload's orphan reaper and by auth checking a watermark asset (for a user of the group): which of
 * these ids of the principal's group have a record, deleted ones included, so an object of a registered asset
 * is never taken for an orphan. `live_keys`: which of the given object keys is the current original of one of
 * those assets (a replacement whose registration is in doubt).
 */
export function internalAssetExistsRoutes(reader: AssetReader): Router {
  const router = Router();
  const schemas = { body: assetsExistRequest };
  router.post('/internal/v1/assets/exists', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    const groupId = principalOf(res).group_id;
    const existing: string[] = [];
    const live = new Set<string>();
    for (const id of new Set(body.ids)) {
      const asset = await reader.findById(groupId, id);
      if (!asset) continue;
      existing.push(id);
      live.add(asset.objectKey);
    }
    res.status(200).json({ existing, live_keys: (body.object_keys ?? []).filter((k) => live.has(k)) });
  });
  return router;
}
