import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { StatusBadge } from '../components/status';
import { formatTime } from '../lib/format';
import { Link } from '../router';
import { api, errorText, type Session } from '../session';

type Job = components['schemas']['Job'];
type JobStatus = components['schemas']['JobStatus'];
type JobType = Job['type'];
const STATUSES: JobStatus[] = ['QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR'];
/** Every job type the document names (a new one fails to compile until it is listed here). */
const TYPE_SET: Record<JobType, true> = {
  processing: true,
  ingest: true,
  bulk_delete: true,
  purge: true,
  cdn_prefetch: true,
  cdn_purge: true,
  reissue_callbacks: true,
  addon: true,
};
const TYPES = Object.keys(TYPE_SET) as JobType[];
/** Live progress: the page reads the jobs again every 1.5 s while one of them runs, every 5 s otherwise. */
const POLL_BUSY_MS = 1500;
const POLL_IDLE_MS = 5000;
const PAGE_SIZE = 25;

export function JobsPage({ session }: { session: Session }) {
  const [status, setStatus] = useState<JobStatus | ''>('');
  const [type, setType] = useState<JobType | ''>('');
  const [page, setPage] = useState(1);
  const [jobs, setJobs] = useState<{ items: Job[]; total: number }>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    const n = ++latest.current;
    api(session)
      .GET('/api/v1/jobs', { params: { query: { page, page_size: PAGE_SIZE, ...(status ? { status } : {}), ...(type ? { type } : {}) } } })
      .then(({ data, error: err }) => {
        if (n !== latest.current) return;
        if (data) {
          setJobs({ items: data.items, total: data.total });
          setError(undefined);
        } else setError(errorText(err));
      })
      .catch((err: unknown) => n === latest.current && setError(errorText(err)));
  }, [status, type, page, tick]);

  const running = jobs?.items.some((j) => j.status === 'QUEUED' || j.status === 'IN_PROGRESS') ?? false;
  useEffect(() => {
    const t = setTimeout(() => setTick((x) => x + 1), running ? POLL_BUSY_MS : POLL_IDLE_MS);
    return () => clearTimeout(t);
  }, [jobs, error, running]);

  const pages = Math.max(1, Math.ceil((jobs?.total ?? 0) / PAGE_SIZE));
  return (
    <>
      <h1>Jobs</h1>
      <form class="panel row" onSubmit={(e) => e.preventDefault()} aria-label="Job filters">
        <div class="field">
          <label for="jobs-status">Status</label>
          <select id="jobs-status" value={status} onChange={(e) => (setPage(1), setStatus(e.currentTarget.value as JobStatus | ''))}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="jobs-type">Type</label>
          <select id="jobs-type" value={type} onChange={(e) => (setPage(1), setType(e.currentTarget.value as JobType | ''))}>
            <option value="">Any</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <p class="muted">{running ? 'Updating live while jobs run.' : 'Updated every few seconds.'}</p>
      </form>
      {error && (
        <p class="notice error" role="alert">
          {error}
        </p>
      )}
      <div class="panel">
        <table>
          <caption class="muted">{jobs ? `${jobs.total} job${jobs.total === 1 ? '' : 's'}` : 'Loading…'}</caption>
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col">Steps</th>
              <th scope="col">Assets</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {jobs?.items.map((j) => (
              <tr key={j.job_id} data-job-id={j.job_id} data-status={j.status}>
                <th scope="row">{j.job_id}</th>
                <td>{j.type}</td>
                <td>
                  <StatusBadge status={j.status} />
                  {j.error && <div class="error-text">{j.error}</div>}
                </td>
                <td>
                  <progress max={100} value={j.progress} aria-label={`Job ${j.job_id} progress`}>
                    {j.progress} %
                  </progress>{' '}
                  {j.progress} %
                </td>
                <td>{j.steps.map((s) => `${s.name}: ${s.status}`).join(', ') || '—'}</td>
                <td>
                  {j.asset_ids.slice(0, 3).map((id) => (
                    <div key={id}>
                      <Link href={`/assets/${id}`}>{id.slice(0, 8)}…</Link>
                    </div>
                  ))}
                  {j.asset_ids.length > 3 && <span class="muted">and {j.asset_ids.length - 3} more</span>}
                </td>
                <td>{formatTime(j.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {pages > 1 && (
          <nav class="pager" aria-label="Pages">
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Previous page
            </button>
            <span>
              Page {page} of {pages}
            </span>
            <button type="button" class="secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
              Next page
            </button>
          </nav>
        )}
      </div>
    </>
  );
}
