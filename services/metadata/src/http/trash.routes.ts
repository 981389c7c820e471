import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { GroupSettings } from '@dam/internal-api';
import type { RunInTransaction } from '../domain/ports';
import { deleteAsset, requestBulkDelete, requestPurge, undeleteAsset, type BulkDeleteLimits } from '../use-cases/trash.use-case';
import { assetIdParam } from './asset-data.routes';

const keysBody = z.object({ keys: z.array(z.string().min(1).max(100)).min(1).max(100) });
// ISO 8601: a time with its offset, or a bare date (midnight UTC).
const instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const bulkDeleteSchemas = { body: z.object({ start_time: instant, end_time: instant }) };
/** Delete and Undelete. */
export const keysSchemas = { params: z.object({ id: assetIdParam }), body: keysBody };

/** `bulk_delete` of the group's settings (CONTRACT §3), with the spec's defaults; `export`: keep the records (off). */
const bulkDeleteSettings = z.object({
  bulk_delete: z
    .object({
      max_assets: z.number().int().positive().catch(1000).default(1000),
      max_range_days: z.number().positive().catch(31).default(31),
      export: z.boolean().catch(false).default(false),
    })
    .catch({ max_assets: 1000, max_range_days: 31, export: false })
    .default({ max_assets: 1000, max_range_days: 31, export: false }),
});

export interface TrashRouteDeps {
  transactions: RunInTransaction;
  /** The group's settings record (auth owns it); bulk delete reads its limits there. */
  settings: { get(groupId: string): Promise<GroupSettings> };
}

/** Endpoints 6-9: Delete, Delete - Bulk, Undelete, Purge Deleted Assets. */
export function trashRoutes(deps: TrashRouteDeps): Router {
  const router = Router();
  const limitsOf = async (groupId: number): Promise<BulkDeleteLimits> => {
    const { bulk_delete: b } = bulkDeleteSettings.parse(await deps.settings.get(String(groupId)));
    return { maxAssets: b.max_assets, maxRangeDays: b.max_range_days, exportRecords: b.export };
  };

  // Before `/:id/delete`, which would take "bulk" for an asset id.
  router.post('/api/v1/assets/bulk/delete', validate(bulkDeleteSchemas), async (req, res) => {
    const { body } = parsed(bulkDeleteSchemas, req, res);
    const caller = principalOf(res);
    const accepted = await requestBulkDelete(
      deps.transactions,
      caller,
      { from: new Date(body.start_time), to: new Date(body.end_time) },
      await limitsOf(caller.group_id),
    );
    res.status(200).json(accepted);
  });

  router.delete('/api/v1/assets/trash/purge', async (_req, res) => {
    const job = await requestPurge(deps.transactions, principalOf(res));
    res.status(202).json({ job_id: job.id, status: job.status });
  });

  router.post('/api/v1/assets/trash/:id/undelete', validate(keysSchemas), async (req, res) => {
    const { params, body } = parsed(keysSchemas, req, res);
    res.json(await undeleteAsset(deps.transactions, principalOf(res), params.id, body.keys, (g) => deps.settings.get(String(g))));
  });

  router.post('/api/v1/assets/:id/delete', validate(keysSchemas), async (req, res) => {
    const { params, body } = parsed(keysSchemas, req, res);
    res.json(await deleteAsset(deps.transactions, principalOf(res), params.id, body.keys));
  });
  return router;
}
