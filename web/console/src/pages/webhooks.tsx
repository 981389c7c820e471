import { useEffect, useState } from 'preact/hooks';
import { createDamClient, type components } from '@dam/client';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { describedBy, FormField, SelectField } from '../components/form-field';
import { ErrorNotice, StatusBadge } from '../components/status';
import '../components/usage.css';
import { formErrors, type FormErrors } from '../lib/form-errors';
import { formatTime } from '../lib/format';
import { handler } from '../lib/handler';
import { lastAnswer, localInput, reissueRange } from '../lib/webhooks';
import { Link } from '../router';
import { api, errorText, type Session } from '../session';

type Delivery = components['schemas']['WebhookDelivery'];
type Status = Delivery['status'];
const STATUSES: Status[] = ['pending', 'delivered', 'failed'];
const PAGE_SIZE = 25;
/** Retries are seconds apart at first: the log is read again every 3 s while one is pending, every 10 s otherwise. */
const POLL_BUSY_MS = 3000;
const POLL_IDLE_MS = 10_000;

function DeliveryRow({ d }: { d: Delivery }) {
  return (
    <tr data-delivery-id={d.id} data-status={d.status}>
      <th scope="row" data-label="Event">
        {d.event}
        {d.reissue_job_id !== null && <div class="muted">reissue job {d.reissue_job_id}</div>}
      </th>
      <td data-label="Asset">
        <Link href={`/assets/${d.asset_id}`}>{d.asset_id.slice(0, 8)}…</Link>
      </td>
      <td class="url-cell" data-label="URL">
        {d.url}
      </td>
      <td data-label="Status">
        <StatusBadge status={d.status} />
      </td>
      <td data-label="Attempts">
        {d.attempts.length > 0 ? (
          <details>
            <summary>
              {d.attempt_count} attempt{d.attempt_count === 1 ? '' : 's'}
            </summary>
            <ol class="delivery-attempts">
              {d.attempts.map((a) => (
                <li key={a.attempt}>
                  {formatTime(a.at)}: {a.response_code !== null ? `HTTP ${a.response_code}` : (a.error ?? 'no answer')} ({a.duration_ms} ms)
                </li>
              ))}
            </ol>
          </details>
        ) : (
          d.attempt_count
        )}
      </td>
      <td data-label="Next retry">{d.next_retry_at ? formatTime(d.next_retry_at) : '—'}</td>
      <td data-label="Last answer" data-last-answer>
        {lastAnswer(d)}
      </td>
      <td data-label="Created">{formatTime(d.created_at)}</td>
    </tr>
  );
}

type ReissueField = 'start_date' | 'end_date' | 'key';

/**
 * Reissue callbacks (seed §18): only an API key of role ASSET_ADMIN may ask (a console session's JWT answers
 * 403), so the form takes one; it is sent once, as X-Service-Api-Key, and kept nowhere but this form.
 */
function Reissue() {
  const now = Date.now();
  const [start, setStart] = useState(localInput(now - 24 * 3_600_000));
  const [end, setEnd] = useState(localInput(now));
  const [key, setKey] = useState('');
  const [errors, setErrors] = useState<FormErrors<ReissueField>>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const [job, setJob] = useState<number>();

  const submit = async (e: Event) => {
    e.preventDefault();
    setJob(undefined);
    const range = reissueRange(start, end);
    const fields: FormErrors<ReissueField>['fields'] = 'errors' in range ? { ...range.errors } : {};
    if (!key.trim()) fields.key = 'Give an API key of role ASSET_ADMIN.';
    for (const f of Object.keys(fields) as ReissueField[]) if (!fields[f]) delete fields[f];
    if (Object.keys(fields).length > 0 || 'errors' in range) {
      setErrors({ fields });
      return;
    }
    setBusy(true);
    try {
      const client = createDamClient({ baseUrl: window.location.origin });
      const { data, error } = await client.POST('/api/v1/callbacks/reissue', {
        body: range,
        headers: { 'X-Service-Api-Key': key.trim() },
      });
      if (data) {
        setErrors({ fields: {} });
        setJob(data.job_id);
      } else setErrors(formErrors<ReissueField>(error, ['start_date', 'end_date']));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="panel"
      aria-labelledby="reissue-h"
      onSubmit={handler(submit, (err) => (setBusy(false), setErrors({ fields: {}, general: errorText(err) })))}
      noValidate
    >
      <h2 id="reissue-h">Reissue callbacks</h2>
      <p class="muted">
        Sends every event of the range again, as new messages, for the assets of the key's user. At most 7 days; events are kept 31 days. Only an API key of
        role ASSET_ADMIN may ask (create one under <Link href="/api-keys">API keys</Link>).
      </p>
      <div class="row">
        <FormField id="reissue-start" label="From" error={errors.fields.start_date}>
          <input
            type="datetime-local"
            {...describedBy('reissue-start', errors.fields.start_date)}
            value={start}
            onInput={(e) => setStart(e.currentTarget.value)}
          />
        </FormField>
        <FormField id="reissue-end" label="To" error={errors.fields.end_date}>
          <input type="datetime-local" {...describedBy('reissue-end', errors.fields.end_date)} value={end} onInput={(e) => setEnd(e.currentTarget.value)} />
        </FormField>
        <FormField id="reissue-key" label="ASSET_ADMIN API key" error={errors.fields.key}>
          <input
            type="password"
            autocomplete="off"
            {...describedBy('reissue-key', errors.fields.key)}
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </FormField>
        <div class="field">
          <button type="submit" disabled={busy}>
            {busy ? 'Reissuing…' : 'Reissue'}
          </button>
        </div>
      </div>
      <ErrorNotice text={errors.general} />
      {job !== undefined && (
        <p class="notice ok" role="status" data-reissue-job={job}>
          Reissue job {job} queued (202). <Link href="/jobs">Follow it under Jobs</Link>; its deliveries appear here marked with the job.
        </p>
      )}
    </form>
  );
}

/** The webhook delivery log (CONTRACT §10, MANAGE_SETTINGS): newest first, by status, paged; and reissue. */
export function WebhooksPage({ session }: { session: Session }) {
  const [status, setStatus] = useState<Status | ''>('');
  const { page, setPage, pages, list, error, reload } = usePagedList(
    (p) => api(session).GET('/api/v1/webhooks/deliveries', { params: { query: { page: p, page_size: PAGE_SIZE, ...(status ? { status } : {}) } } }),
    [status],
    PAGE_SIZE,
  );

  const busy = list?.items.some((d) => d.status === 'pending') ?? false;
  useEffect(() => {
    const t = setTimeout(reload, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
    return () => clearTimeout(t);
  }, [list, error, busy]);

  return (
    <>
      <h1>Webhooks</h1>
      <form class="panel row" aria-label="Delivery filters" onSubmit={(e) => e.preventDefault()}>
        <SelectField any id="hooks-status" label="Status" value={status} options={STATUSES} onChange={(v) => (setPage(1), setStatus(v))} />
        <p class="muted">
          The webhook URLs and the signing secret are in the settings. {busy ? 'Updating while deliveries are pending.' : 'Updated every few seconds.'}
        </p>
      </form>
      <ErrorNotice text={error} />
      <div class="panel">
        <DataTable
          caption={list && `${counted(list.total, 'delivery', 'deliveries')}${status ? ` ${status}` : ''}`}
          columns={['Event', 'Asset', 'URL', 'Status', 'Attempts', 'Next retry', 'Last answer', 'Created']}
          pager={{ page, pages, onPage: setPage, label: 'Pages of deliveries' }}
        >
          {list?.items.map((d) => (
            <DeliveryRow key={d.id} d={d} />
          ))}
        </DataTable>
      </div>
      <Reissue />
    </>
  );
}
