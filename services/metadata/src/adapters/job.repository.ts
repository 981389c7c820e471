import type { Pool, PoolClient } from '@dam/db';
import type { JobWorker } from '@dam/events';
import { DEFAULT_JOB_TIMINGS, type Job, type JobParams, type JobStatus, type JobStep, type JobTimings, type JobType, type NewJob } from '../domain/job';
import type { JobFilter, JobOutcome, JobReader, JobRenewal, JobStore } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface JobRow {
  id: string;
  group_id: number;
  type: JobType;
  worker: JobWorker | null;
  params: JobParams;
  attempts: number;
  status: JobStatus;
  asset_ids: string[];
  steps: JobStep[];
  progress: number;
  error: string | null;
  skipped: Record<string, string> | null;
  created_by: number | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, group_id, type, worker, params, attempts, status, asset_ids, steps, progress, error, skipped, created_by, created_at, updated_at';
const OPEN = `status IN ('QUEUED', 'IN_PROGRESS')`;

const toJob = (r: JobRow): Job => ({
  id: Number(r.id),
  groupId: r.group_id,
  type: r.type,
  worker: r.worker,
  params: r.params,
  attempts: r.attempts,
  status: r.status,
  assetIds: r.asset_ids,
  steps: r.steps,
  progress: r.progress,
  error: r.error,
  skipped: r.skipped ?? {},
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/**
 * `steps` with every open step ended as `$status` (the job ends with them); a step never reported started began
 * at `startedAt` (the worker's start: a job done within its start delay reports only its end), or now.
 */
const endSteps = (status: string, startedAt = 'now()') => `(SELECT coalesce(jsonb_agg(CASE WHEN s->>'status' IN ('COMPLETED', 'ERROR') THEN s
    ELSE s || jsonb_build_object('status', ${status}::text, 'finished_at', to_jsonb(now()),
                                 'started_at', CASE WHEN s->>'started_at' IS NULL THEN to_jsonb(${startedAt}) ELSE s->'started_at' END) END
    ORDER BY i), '[]'::jsonb)
  FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(s, i))`;

/** When the worker says it took the job, kept between the job's creation and now (its clock may be off); or now. */
const workerStart = (param: string) => `GREATEST(created_at, LEAST(coalesce(${param}::timestamptz, now()), now()))`;

/**
 * `steps` with the named step started (if it was still QUEUED) and the open steps before it completed: a worker
 * that reports a later step is done with the earlier ones. A step never reported started began at `startedAt`
 * (the worker's start) when it is the job's first, else now.
 */
const startStep = (name: string, startedAt: string) => `(SELECT coalesce(jsonb_agg(CASE
    WHEN s->>'name' = ${name}::text AND s->>'status' = 'QUEUED'
      THEN s || jsonb_build_object('status', 'IN_PROGRESS', 'started_at', to_jsonb(CASE WHEN i = 1 THEN ${startedAt} ELSE now() END))
    WHEN s->>'status' IN ('QUEUED', 'IN_PROGRESS')
         AND i < (SELECT min(j) FROM jsonb_array_elements(steps) WITH ORDINALITY AS f(t, j) WHERE t->>'name' = ${name}::text)
      THEN s || jsonb_build_object('status', 'COMPLETED', 'finished_at', to_jsonb(now()),
                                   'started_at', CASE WHEN s->>'started_at' IS NULL THEN to_jsonb(${startedAt}) ELSE s->'started_at' END)
    ELSE s END ORDER BY i), '[]'::jsonb)
  FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(s, i))`;

/** PostgreSQL `jobs`; group_id is part of every statement a tenant's request can reach. */
export class JobRepository implements JobStore, JobReader {
  constructor(
    private readonly db: Queryable,
    private readonly timings: JobTimings = DEFAULT_JOB_TIMINGS,
  ) {}

  async create(j: NewJob): Promise<Job> {
    const steps: JobStep[] = j.steps.map((name) => ({ name, status: 'QUEUED', started_at: null, finished_at: null }));
    // A job for a worker gets its first deadline now: if no worker starts it in time it is handed out again.
    const { rows } = await this.db.query<JobRow>(
      `INSERT INTO jobs (group_id, type, worker, params, asset_ids, steps, created_by, lease_until)
       VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $3::text IS NULL THEN NULL ELSE now() + make_interval(secs => $8 / 1000.0) END)
       RETURNING ${COLUMNS}`,
      [j.groupId, j.type, j.worker, JSON.stringify(j.params ?? {}), j.assetIds, JSON.stringify(steps), j.createdBy, this.timings.queuedMs],
    );
    return toJob(rows[0] as JobRow);
  }

  async renew(groupId: number, jobId: number, r: JobRenewal): Promise<boolean> {
    // The first holder keeps the lease while it reports; another worker takes over only once it ran out.
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET status = 'IN_PROGRESS', progress = GREATEST(progress, $4), lease_owner = $3,
         lease_until = now() + make_interval(secs => $6 / 1000.0), steps = ${startStep('$5', workerStart('$7'))}
       WHERE group_id = $1 AND id = $2 AND ${OPEN}
         AND (lease_owner IS NULL OR lease_owner = $3 OR lease_until < now())`,
      [groupId, jobId, r.worker, r.progress, r.step, this.timings.leaseMs, r.startedAt ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  async findForUpdate(groupId: number, jobId: number): Promise<Job | undefined> {
    const { rows } = await this.db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE group_id = $1 AND id = $2 FOR UPDATE`, [groupId, jobId]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async finish(groupId: number, jobId: number, outcome: JobOutcome): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET status = $3, progress = 100, error = $4, skipped = $5, lease_owner = NULL, lease_until = NULL,
         steps = ${endSteps('$3', workerStart('$6'))}
       WHERE group_id = $1 AND id = $2 AND ${OPEN}`,
      [
        groupId,
        jobId,
        outcome.status,
        outcome.error ?? null,
        outcome.skipped && Object.keys(outcome.skipped).length > 0 ? JSON.stringify(outcome.skipped) : null,
        outcome.startedAt ?? null,
      ],
    );
    return (rowCount ?? 0) > 0;
  }

  async finishOpen(groupId: number, assetId: string, type: JobType, outcome: JobOutcome): Promise<number> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET status = $4, progress = 100, error = $5, lease_owner = NULL, lease_until = NULL, steps = ${endSteps('$4')}
       WHERE group_id = $1 AND $2 = ANY(asset_ids) AND type = $3 AND ${OPEN}`,
      [groupId, assetId, type, outcome.status, outcome.error ?? null],
    );
    return rowCount ?? 0;
  }

  async claimExpired(limit: number): Promise<Job[]> {
    // Another sweeper (a second metadata replica) skips the rows this one holds.
    const { rows } = await this.db.query<JobRow>(
      `SELECT ${COLUMNS} FROM jobs WHERE ${OPEN} AND worker IS NOT NULL AND lease_until < now()
       ORDER BY lease_until LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    return rows.map(toJob);
  }

  async handOutAgain(groupId: number, jobId: number): Promise<number> {
    const { rows } = await this.db.query<{ attempts: number }>(
      `UPDATE jobs SET attempts = attempts + 1, lease_owner = NULL, lease_until = now() + make_interval(secs => $3 / 1000.0)
       WHERE group_id = $1 AND id = $2 RETURNING attempts`,
      [groupId, jobId, this.timings.queuedMs],
    );
    return rows[0]?.attempts ?? 0;
  }

  async claimLocal(owner: string): Promise<Job | undefined> {
    // The oldest job metadata runs itself that is queued, or whose runner (another replica) went quiet.
    const { rows } = await this.db.query<JobRow>(
      `UPDATE jobs SET status = 'IN_PROGRESS', lease_owner = $1, lease_until = now() + make_interval(secs => $2 / 1000.0),
         attempts = attempts + CASE WHEN status = 'IN_PROGRESS' THEN 1 ELSE 0 END,
         steps = (SELECT coalesce(jsonb_agg(CASE WHEN i = 1 AND s->>'status' = 'QUEUED'
                    THEN s || jsonb_build_object('status', 'IN_PROGRESS', 'started_at', to_jsonb(now())) ELSE s END ORDER BY i), '[]'::jsonb)
                  FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(s, i))
       WHERE id = (SELECT id FROM jobs WHERE worker IS NULL
                     AND (status = 'QUEUED' OR (status = 'IN_PROGRESS' AND lease_until < now()))
                   ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING ${COLUMNS}`,
      [owner, this.timings.leaseMs],
    );
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async advance(groupId: number, jobId: number, progress: number, addAssetIds: readonly string[] = []): Promise<void> {
    await this.db.query(
      `UPDATE jobs SET progress = GREATEST(progress, $3), asset_ids = asset_ids || $4::text[],
         lease_until = now() + make_interval(secs => $5 / 1000.0)
       WHERE group_id = $1 AND id = $2 AND ${OPEN}`,
      [groupId, jobId, Math.max(0, Math.min(99, Math.floor(progress))), addAssetIds, this.timings.leaseMs],
    );
  }

  async findJob(groupId: number, id: number): Promise<Job | undefined> {
    const { rows } = await this.db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE group_id = $1 AND id = $2`, [groupId, id]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  async listJobs(groupId: number, f: JobFilter): Promise<{ items: Job[]; total: number }> {
    const where = ['group_id = $1'];
    const args: unknown[] = [groupId];
    if (f.status) where.push(`status = $${args.push(f.status)}`);
    if (f.type) where.push(`type = $${args.push(f.type)}`);
    if (f.createdBy !== undefined) where.push(`created_by = $${args.push(f.createdBy)}`);
    const filter = where.join(' AND ');
    const total = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE ${filter}`, args);
    const limit = args.push(f.pageSize);
    const offset = args.push((f.page - 1) * f.pageSize);
    const { rows } = await this.db.query<JobRow>(
      `SELECT ${COLUMNS} FROM jobs WHERE ${filter} ORDER BY created_at DESC, id DESC LIMIT $${limit} OFFSET $${offset}`,
      args,
    );
    return { items: rows.map(toJob), total: total.rows[0]?.n ?? 0 };
  }
}
