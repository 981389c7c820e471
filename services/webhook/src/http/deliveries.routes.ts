import { Router } from 'express';
import { z } from 'zod';
import { PERMISSION, principalOf, requireAny } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { DeliveryStore } from '../domain/ports';

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const deliverySchemas = {
  query: z.object({
    status: z.enum(['failed', 'delivered', 'pending']).optional(),
    page: z.coerce.number().int().min(1).default(1),
    page_size: z.coerce.number().int().min(1).max(100).default(25),
  }),
};

/**
 * The delivery log (CONTRACT §10): the group's deliveries, newest first, with every attempt's answer and the next
 * retry. MANAGE_SETTINGS, as the settings that name the URLs.
 */
export function deliveryRoutes(repo: Pick<DeliveryStore, 'log'>): Router {
  const router = Router();
  router.get('/api/v1/webhooks/deliveries', validate(deliverySchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_SETTINGS]);
    const { query } = parsed(deliverySchemas, req, res);
    const { items, total } = await repo.log(p.group_id, query.status, (query.page - 1) * query.page_size, query.page_size);
    res.json({ items, page: query.page, page_size: query.page_size, total });
  });
  return router;
}
