import { Router } from 'express';
import { z } from 'zod';
import { principalOf, readsOwnOnly } from '@dam/auth-tokens';
import { notFound } from '@dam/errors';
import { parsed, pathId, validate } from '@dam/http';
import { JOB_STATUSES, JOB_TYPES, toJobView } from '../domain/job';
import type { JobReader } from '../domain/ports';

const jobNotFound = () => notFound('JOB_NOT_FOUND', 'Job not found');

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const jobSchemas = { params: z.object({ job_id: pathId(z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER), jobNotFound) }) };
export const jobListSchemas = {
  query: z.object({
    status: z.enum(JOB_STATUSES).optional(),
    type: z.enum(JOB_TYPES).optional(),
    page: z.coerce.number().int().min(1).default(1),
    page_size: z.coerce.number().int().min(1).max(100).default(25),
  }),
};

/**
 * CONTRACT §6: `GET /api/v1/jobs/{job_id}` and the filtered, paged list, from the table the work itself
 * updates. A caller sees its group's jobs; one that reads only its own assets (CREATOR) sees only its own jobs.
 */
export function jobRoutes(jobs: JobReader): Router {
  const router = Router();

  router.get('/api/v1/jobs/:job_id', validate(jobSchemas), async (req, res) => {
    const { params } = parsed(jobSchemas, req, res);
    const p = principalOf(res);
    const job = await jobs.findJob(p.group_id, params.job_id);
    if (!job || (readsOwnOnly(p) && job.createdBy !== p.user_id)) throw jobNotFound();
    res.json(toJobView(job));
  });

  router.get('/api/v1/jobs', validate(jobListSchemas), async (req, res) => {
    const { query } = parsed(jobListSchemas, req, res);
    const p = principalOf(res);
    const { items, total } = await jobs.listJobs(p.group_id, {
      ...(query.status ? { status: query.status } : {}),
      ...(query.type ? { type: query.type } : {}),
      ...(readsOwnOnly(p) ? { createdBy: p.user_id } : {}),
      page: query.page,
      pageSize: query.page_size,
    });
    res.json({ items: items.map(toJobView), page: query.page, page_size: query.page_size, total });
  });
  return router;
}
