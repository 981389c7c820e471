import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import type { UsageStore } from '../domain/ports';
import { metricNotFound, usageSeries } from '../use-cases/usage-series.use-case';

/** ISO 8601: a date and time with its offset, or a date alone (midnight UTC). */
const isoDate = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);

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

/** Usage statistics (CONTRACT §9): `GET /api/v1/usage/{metric}`. */
export function usageRoutes(usage: UsageStore, now: () => number = Date.now): Router {
  const router = Router();
  router.get('/api/v1/usage/:metric', validate(usageSchemas), async (req, res) => {
    const { params, query } = parsed(usageSchemas, req, res);
    const { from, to, period, user_id } = query;
    res.json(
      await usageSeries(
        usage,
        principalOf(res),
        { metric: params.metric, period, ...(from ? { from } : {}), ...(to ? { to } : {}), ...(user_id ? { userId: user_id } : {}) },
        now,
      ),
    );
  });
  return router;
}
