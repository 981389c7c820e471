import { Router } from 'express';
import { z } from 'zod';
import { PERMISSION, principalOf, requireAny } from '@dam/auth-tokens';
import { notFound, validationFailed } from '@dam/errors';
import { USAGE_METRICS, type UsageMetric } from '@dam/events';
import { parsed, pathId, validate } from '@dam/http';
import type { UsageRepository } from '../adapters/usage.repository';

const DAY_MS = 86_400_000;
/** ISO 8601: a date and time with its offset, or a date alone (midnight UTC). */
const isoDate = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);
const metricNotFound = (metric: string) => notFound('METRIC_NOT_FOUND', `No metric ${metric}: one of ${USAGE_METRICS.join(', ')}`);
/** The longest range one query covers (CONTRACT §9). */
export const MAX_USAGE_RANGE_DAYS = 364;

/** The request, as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const usageSchemas = {
  params: z.object({ metric: pathId(z.string().min(1).max(64), () => metricNotFound('of that name')) }),
  query: z.object({
    from: isoDate.optional(),
    to: isoDate.optional(),
    period: z.enum(['1h', '24h', '7d']).default('1h'),
    user_id: z.coerce.number().int().positive().optional(),
  }),
};

/**
 * Usage statistics (CONTRACT §9, VIEW_USAGE): one metric's series over `from`..`to` (default the last 24 hours)
 * in buckets of `period` (1h, 24h, 7d; default 1h), for the group or one `user_id`.
 */
export function usageRoutes(usage: UsageRepository, now: () => number = Date.now): Router {
  const router = Router();
  router.get('/api/v1/usage/:metric', validate(usageSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.VIEW_USAGE]);
    const { params, query } = parsed(usageSchemas, req, res);
    if (!(USAGE_METRICS as readonly string[]).includes(params.metric)) {
      throw metricNotFound(params.metric);
    }
    const to = query.to ? new Date(query.to) : new Date(now());
    const from = query.from ? new Date(query.from) : new Date(to.getTime() - DAY_MS);
    if (from.getTime() >= to.getTime()) throw validationFailed([{ path: 'from', message: 'must be before to' }]);
    if (to.getTime() - from.getTime() > MAX_USAGE_RANGE_DAYS * DAY_MS) throw validationFailed([{ path: 'to', message: `the range is at most ${MAX_USAGE_RANGE_DAYS} days` }]);
    const metric = params.metric as UsageMetric;
    const { series, total } = await usage.series({ groupId: p.group_id, metric, from, to, period: query.period, ...(query.user_id ? { userId: query.user_id } : {}) });
    res.json({ metric, from: from.toISOString(), to: to.toISOString(), period: query.period, series, total });
  });
  return router;
}
