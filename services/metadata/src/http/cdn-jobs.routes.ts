import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { RunInTransaction } from '../domain/ports';
import { requestCdnJob } from '../use-cases/cdn-jobs.use-case';

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const cdnJobSchemas = { body: z.object({ urls: z.array(z.string().min(1).max(8192)).min(1).max(100) }) };

/** CONTRACT §7 CDN prefetch (READ) and purge (EDIT), permissions checked at the gateway: 202 `{job_id, status}`. */
export function cdnJobRoutes(transactions: RunInTransaction): Router {
  const router = Router();
  for (const kind of ['prefetch', 'purge'] as const) {
    router.post(`/api/v1/cdn/${kind}`, validate(cdnJobSchemas), async (req, res) => {
      const { body } = parsed(cdnJobSchemas, req, res);
      const job = await requestCdnJob(transactions, principalOf(res), kind, body.urls);
      res.status(202).json({ job_id: job.id, status: job.status });
    });
  }
  return router;
}
