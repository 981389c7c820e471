import { useEffect, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { SelectField } from '../components/form-field';
import { ErrorNotice, StatusBadge } from '../components/status';
import { formatTime } from '../lib/format';
import { Link } from '../router';
import { api, type Session } from '../session';

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
  const {
    page,
    setPage,
    pages,
    list: jobs,
    error,
    reload,
  } = usePagedList(
    (p) => api(session).GET('/api/v1/jobs', { params: { query: { page: p, page_size: PAGE_SIZE, ...(status ? { status } : {}), ...(type ? { type } : {}) } } }),
    [status, type],
    PAGE_SIZE,
  );

  const running = jobs?.items.some((j) => j.status === 'QUEUED' || j.status === 'IN_PROGRESS') ?? false;
  useEffect(() => {
    const t = setTimeout(reload, running ? POLL_BUSY_MS : POLL_IDLE_MS);
    return () => clearTimeout(t);
  }, [jobs, error, running]);

  return (
    <>
      <h1>Jobs</h1>
      <form class="panel row" onSubmit={(e) => e.preventDefault()} aria-label="Job filters">
        <SelectField any id="jobs-status" label="Status" value={status} options={STATUSES} onChange={(v) => (setPage(1), setStatus(v))} />
        <SelectField any id="jobs-type" label="Type" value={type} options={TYPES} onChange={(v) => (setPage(1), setType(v))} />
        <p class="muted">{running ? 'Updating live while jobs run.' : 'Updated every few seconds.'}</p>
      </form>
      <ErrorNotice text={error} />
      <div class="panel">
        <DataTable
          caption={jobs && counted(jobs.total, 'job')}
          columns={['Job', 'Type', 'Status', 'Progress', 'Steps', 'Assets', 'Updated']}
          pager={{ page, pages, onPage: setPage, label: 'Pages of jobs' }}
        >
          {jobs?.items.map((j) => (
            <tr key={j.job_id} data-job-id={j.job_id} data-status={j.status}>
              <th scope="row" data-label="Job">
                {j.job_id}
              </th>
              <td data-label="Type">{j.type}</td>
              <td data-label="Status">
                <StatusBadge status={j.status} />
                {j.error && <div class="error-text">{j.error}</div>}
              </td>
              <td data-label="Progress">
                <progress max={100} value={j.progress} aria-label={`Job ${j.job_id} progress`}>
                  {j.progress} %
                </progress>{' '}
                {j.progress} %
              </td>
              <td data-label="Steps">{j.steps.map((s) => `${s.name}: ${s.status}`).join(', ') || '—'}</td>
              <td data-label="Assets">
                {j.asset_ids.slice(0, 3).map((id) => (
                  <div key={id}>
                    <Link href={`/assets/${id}`}>{id.slice(0, 8)}…</Link>
                  </div>
                ))}
                {j.asset_ids.length > 3 && <span class="muted">and {j.asset_ids.length - 3} more</span>}
              </td>
              <td data-label="Updated">{formatTime(j.updated_at)}</td>
            </tr>
          ))}
        </DataTable>
      </div>
    </>
  );
}
