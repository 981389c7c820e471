import type { Pool, PoolClient } from '@dam/db';
import type { Job, JobStatus, JobStep, JobType, NewJob } from '../domain/job';
import type { JobFilter, JobReader, JobStore } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface JobRow {
  id: string;
  group_id: number;
  type: JobType;
  status: JobStatus;
  asset_ids: string[];
  steps: JobStep[];
  progress: number;
  error: string | null;
  created_by: number | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, group_id, type, status, asset_ids, steps, progress, error, created_by, created_at, updated_at';

const toJob = (r: JobRow): Job => ({
  id: Number(r.id),
  groupId: r.group_id,
  type: r.type,
  status: r.status,
  assetIds: r.asset_ids,
  steps: r.steps,
  progress: r.progress,
  error: r.error,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** PostgreSQL `jobs`; group_id is part of every statement. */
export class JobRepository implements JobStore, JobReader {
  constructor(private readonly db: Queryable) {}

  async create(j: NewJob): Promise<Job> {
    const steps: JobStep[] = j.steps.map((name) => ({ name, status: 'QUEUED', started_at: null, finished_at: null }));
    const { rows } = await this.db.query<JobRow>(
      `INSERT INTO jobs (group_id, type, asset_ids, steps, created_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [j.groupId, j.type, j.assetIds, JSON.stringify(steps), j.createdBy],
    );
    return toJob(rows[0] as JobRow);
  }

  async finishOpen(groupId: number, assetId: string, type: JobType, outcome: { status: 'COMPLETED' | 'ERROR'; error?: string }): Promise<number> {
    // Every step still open ends with the job; the conditional WHERE keeps a finished job as it is.
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET status = $4, progress = 100, error = $5, lease_owner = NULL, lease_until = NULL,
         steps = (SELECT coalesce(jsonb_agg(CASE WHEN s->>'status' IN ('COMPLETED', 'ERROR') THEN s
                    ELSE s || jsonb_build_object('status', $4::text, 'finished_at', to_jsonb(now()),
                                                 'started_at', CASE WHEN s->>'started_at' IS NULL THEN to_jsonb(now()) ELSE s->'started_at' END) END
                    ORDER BY i), '[]'::jsonb)
                  FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(s, i))
       WHERE group_id = $1 AND $2 = ANY(asset_ids) AND type = $3 AND status IN ('QUEUED', 'IN_PROGRESS')`,
      [groupId, assetId, type, outcome.status, outcome.error ?? null],
    );
    return rowCount ?? 0;
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
