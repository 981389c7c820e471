import { Router } from 'express';
import { z } from 'zod';
import { hasPermission, PERMISSION, principalOf } from '@dam/auth-tokens';
import { forbidden, validationFailed } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { RunInTransaction } from '../domain/ports';

/** The specification's limit on one reissue (Limits: Reissue range). */
export const REISSUE_MAX_RANGE_MS = 7 * 24 * 60 * 60 * 1000;

/** ISO 8601: a date and time with its offset, or a date alone (midnight UTC). */
const isoDate = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);
const body = z.object({ start_date: isoDate, end_date: isoDate });
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const reissueSchemas = { body };

/**
 * Reissue callbacks (spec endpoint 18): an API key of role ASSET_ADMIN only (the gateway checks the token, this
 * service again); a range of at most 7 days. One job for the webhook service, which sends again the callbacks of
 * the key user's assets in that range: 202 `{job_id, status}`.
 */
export function reissueRoutes(transactions: RunInTransaction): Router {
  const router = Router();
  router.post('/api/v1/callbacks/reissue', validate(reissueSchemas), async (req, res) => {
    const caller = principalOf(res);
    if (!hasPermission(caller, PERMISSION.REISSUE_CALLBACKS))
      throw forbidden('Only an API key of role ASSET_ADMIN reissues callbacks', 'ASSET_ADMIN_KEY_REQUIRED');
    const { body: b } = parsed(reissueSchemas, req, res);
    const from = new Date(b.start_date);
    const to = new Date(b.end_date);
    if (to.getTime() <= from.getTime()) throw validationFailed([{ path: 'end_date', message: 'must be after start_date' }]);
    if (to.getTime() - from.getTime() > REISSUE_MAX_RANGE_MS) throw validationFailed([{ path: 'end_date', message: 'the range is at most 7 days' }]);
    const job = await transactions(async (tx) => {
      const made = await tx.jobs.create({
        groupId: caller.group_id,
        type: 'reissue_callbacks',
        worker: 'webhook',
        params: { range: { from: from.toISOString(), to: to.toISOString() }, roleId: caller.role_id },
        assetIds: [],
        steps: [],
        createdBy: caller.user_id,
      });
      await tx.commands.send(made, undefined, 0);
      return made;
    });
    res.status(202).json({ job_id: job.id, status: job.status });
  });
  return router;
}
