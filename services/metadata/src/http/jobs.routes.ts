import { pipeline } from 'node:stream/promises';
import { Router } from 'express';
import { z } from 'zod';
import { principalOf, readsOwnOnly, type Principal } from '@dam/auth-tokens';
import { conflict, notFound } from '@dam/errors';
import { parsed, pathId, validate } from '@dam/http';
import { EXPORT_STEP, type DeletedRecordExports } from '../domain/bulk-delete-export';
import { JOB_STATUSES, JOB_TYPES, toJobView, type Job } from '../domain/job';
import type { JobReader } from '../domain/ports';

const jobNotFound = () => notFound('JOB_NOT_FOUND', 'Job not found');

const hasExport = (job: Job): boolean => job.type === 'bulk_delete' && job.steps.some((s) => s.name === EXPORT_STEP);

/** CONTRACT §6's job record; a bulk delete that keeps its records also says where to get them. */
const viewOf = (job: Job) => ({ ...toJobView(job), ...(hasExport(job) ? { export_url: `/api/v1/jobs/${job.id}/export` } : {}) });

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
export function jobRoutes(jobs: JobReader, exports?: DeletedRecordExports): Router {
  const router = Router();
  const visibleJob = async (p: Principal, id: number): Promise<Job> => {
    const job = await jobs.findJob(p.group_id, id);
    if (!job || (readsOwnOnly(p) && job.createdBy !== p.user_id)) throw jobNotFound();
    return job;
  };

  router.get('/api/v1/jobs/:job_id', validate(jobSchemas), async (req, res) => {
    const { params } = parsed(jobSchemas, req, res);
    res.json(viewOf(await visibleJob(principalOf(res), params.job_id)));
  });

  /**
   * Delete - Bulk's data export: the records of the assets the job trashed, as JSON lines in the order it trashed
   * them, streamed from the bucket to whoever may see the job (never a raw object-store URL).
   */
  router.get('/api/v1/jobs/:job_id/export', validate(jobSchemas), async (req, res) => {
    const { params } = parsed(jobSchemas, req, res);
    const job = await visibleJob(principalOf(res), params.job_id);
    if (!hasExport(job) || !exports) throw notFound('EXPORT_NOT_FOUND', 'The job keeps no export (bulk_delete.export was off when it was asked for)');
    if (job.status === 'QUEUED' || job.status === 'IN_PROGRESS')
      throw conflict('EXPORT_NOT_READY', 'The job is still running: its export is complete once the job has ended');
    const body = await exports.open(job.groupId, job.id);
    res.status(200);
    res.setHeader('content-type', 'application/x-ndjson');
    res.setHeader('content-disposition', `attachment; filename="bulk-delete-${job.id}.jsonl"`);
    await pipeline(body, res);
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
    res.json({ items: items.map(viewOf), page: query.page, page_size: query.page_size, total });
  });
  return router;
}
