import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { notFound } from '@dam/errors';
import { assetsExistRequest, type AssetSource } from '@dam/internal-api';
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
    // One read for up to 1,000 ids (the reaper asks about a whole sweep at once).
    const found = await reader.findManyById(groupId, [...new Set(body.ids)]);
    const known = new Set(found.map((a) => a.id));
    const live = new Set(found.map((a) => a.objectKey));
    res.status(200).json({ existing: [...new Set(body.ids)].filter((id) => known.has(id)), live_keys: (body.object_keys ?? []).filter((k) => live.has(k)) });
  });
  return router;
}

/**
 * For transcode (no user behind it: it works on a job of the group in the path): where a live asset's original
 * is, to stamp the group's watermark image onto `*-wm-video`. A deleted asset is not a watermark any more.
 */
export function internalAssetSourceRoutes(reader: AssetReader): Router {
  const router = Router();
  const schemas = { params: z.object({ group_id: z.coerce.number().int().positive(), id: z.string().regex(/^[A-Za-z0-9]{1,64}$/) }) };
  router.get('/internal/v1/groups/:group_id/assets/:id/source', validate(schemas), async (req, res) => {
    const { params } = parsed(schemas, req, res);
    const asset = await reader.findById(params.group_id, params.id);
    if (!asset || asset.deletedAt) throw notFound('ASSET_NOT_FOUND', 'No such asset');
    const body: AssetSource = { object_key: asset.objectKey, content_type: asset.contentType, checksum: asset.checksum };
    res.status(200).json(body);
  });
  return router;
}
