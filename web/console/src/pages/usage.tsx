import { useEffect, useRef, useState } from 'preact/hooks';
import { counted, DataTable } from '../components/data-table';
import { UsageChart } from '../components/usage-chart';
import '../components/usage.css';
import {
  bucketLabel,
  fillSeries,
  formatMetric,
  METRICS,
  periodFor,
  periodsFor,
  RANGES,
  rangeOf,
  type Metric,
  type MetricName,
  type Period,
  type RangeName,
} from '../lib/usage';
import { api, can, errorText, type Session } from '../session';

/** Counts arrive within seconds (every service publishes every 10 s): the page reads them again as often. */
const REFRESH_MS = 10_000;
const PERIOD_LABEL: Record<Period, string> = { '1h': 'Hour', '24h': 'Day', '7d': 'Week' };

type Series = { state: 'ok'; points: { start: number; value: number }[]; total: number; period: Period } | { state: 'error'; message: string };

function MetricPanel({ metric, series }: { metric: Metric; series: Series | undefined }) {
  const id = `usage-${metric.name}`;
  return (
    <section class="panel usage-panel" aria-labelledby={`${id}-h`} data-metric={metric.name} data-total={series?.state === 'ok' ? series.total : undefined}>
      <h2 id={`${id}-h`}>{metric.label}</h2>
      {!series && <p class="muted">Loading…</p>}
      {series?.state === 'error' && (
        <p class="notice error" role="alert">
          {series.message}
        </p>
      )}
      {series?.state === 'ok' && (
        <>
          <p class="usage-total">
            {metric.kind === 'gauge' ? 'Latest' : 'Total'}: <strong data-total-text>{formatMetric(series.total, metric.unit)}</strong>
          </p>
          <UsageChart label={metric.label} unit={metric.unit} period={series.period} points={series.points} total={series.total} />
          <details>
            <summary>Values of {metric.label.toLowerCase()}</summary>
            <ValuesTable metric={metric} series={series} />
          </details>
        </>
      )}
    </section>
  );
}

const VALUES_PAGE = 24;

/** The buckets that hold something, newest first, a page at a time. */
function ValuesTable({ metric, series }: { metric: Metric; series: Extract<Series, { state: 'ok' }> }) {
  const rows = series.points.filter((p) => p.value !== 0).reverse();
  const [page, setPage] = useState(1);
  const pages = Math.max(1, Math.ceil(rows.length / VALUES_PAGE));
  if (rows.length === 0) return <p class="muted">Nothing counted in this range.</p>;
  return (
    <DataTable
      caption={`${counted(rows.length, 'bucket')} with ${metric.label.toLowerCase()}`}
      columns={['Bucket', 'Value']}
      stack={false}
      pager={{ page, pages, onPage: setPage, label: `Pages of ${metric.label.toLowerCase()}` }}
    >
      {rows.slice((page - 1) * VALUES_PAGE, page * VALUES_PAGE).map((p) => (
        <tr key={p.start}>
          <th scope="row">{bucketLabel(p.start, series.period)}</th>
          <td>{formatMetric(p.value, metric.unit)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

/** Usage statistics (CONTRACT §9, VIEW_USAGE): a chart per metric over a range and bucket, the group's or one user's. */
export function UsagePage({ session }: { session: Session }) {
  const [range, setRange] = useState<RangeName>('24h');
  const [wanted, setWanted] = useState<Period>('1h');
  const [userId, setUserId] = useState('');
  const [users, setUsers] = useState<{ user_id: number; email: string }[]>();
  const [data, setData] = useState<Partial<Record<MetricName, Series>>>({});
  const [tick, setTick] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  const latest = useRef(0);

  const { from, to } = rangeOf(range, now);
  const fromMs = Date.parse(from);
  const toMs = Date.parse(to);
  const period = periodFor(fromMs, toMs, wanted);
  const offered = periodsFor(fromMs, toMs);
  const userOk = userId === '' || /^[1-9][0-9]{0,9}$/.test(userId);

  // Only an administrator may list the users; others give a user's number.
  useEffect(() => {
    if (!can(session, 'MANAGE_USERS')) return;
    api(session)
      .GET('/api/v1/users', { params: { query: { page_size: 100 } } })
      .then(({ data: d }) => d && setUsers(d.items.map((u) => ({ user_id: u.user_id, email: u.email }))))
      .catch(() => setUsers(undefined));
  }, []);

  useEffect(() => {
    if (!userOk) return;
    const n = ++latest.current;
    const client = api(session);
    for (const m of METRICS) {
      client
        .GET('/api/v1/usage/{metric}', {
          params: { path: { metric: m.name }, query: { from, to, period, ...(userId ? { user_id: Number(userId) } : {}) } },
        })
        .then(({ data: d, error }) => {
          if (n !== latest.current) return;
          const s: Series = d
            ? { state: 'ok', points: fillSeries(d.series, Date.parse(d.from), Date.parse(d.to), d.period), total: d.total, period: d.period }
            : { state: 'error', message: errorText(error) };
          setData((old) => ({ ...old, [m.name]: s }));
        })
        .catch((err: unknown) => n === latest.current && setData((old) => ({ ...old, [m.name]: { state: 'error', message: errorText(err) } })));
    }
  }, [from, to, period, userId, tick]);

  useEffect(() => {
    const t = setTimeout(() => {
      setNow(Date.now());
      setTick((x) => x + 1);
    }, REFRESH_MS);
    return () => clearTimeout(t);
  }, [tick, data]);

  const refresh = () => {
    setNow(Date.now());
    setTick((x) => x + 1);
  };

  return (
    <>
      <h1>Usage</h1>
      <form class="panel row" aria-label="Usage filters" onSubmit={(e) => (e.preventDefault(), refresh())}>
        <div class="field">
          <label for="usage-range">Range</label>
          <select id="usage-range" value={range} onChange={(e) => (setRange(e.currentTarget.value as RangeName), setNow(Date.now()))}>
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="usage-period">Bucket</label>
          <select id="usage-period" value={period} onChange={(e) => setWanted(e.currentTarget.value as Period)} aria-describedby="usage-period-help">
            {offered.map((p) => (
              <option key={p} value={p}>
                {PERIOD_LABEL[p]}
              </option>
            ))}
          </select>
          <span id="usage-period-help" class="help">
            Hours are offered up to 33 days.
          </span>
        </div>
        <div class="field">
          {users ? (
            <>
              <label for="usage-user">Whose usage</label>
              <select id="usage-user" value={userId} onChange={(e) => setUserId(e.currentTarget.value)}>
                <option value="">The whole group</option>
                {users.map((u) => (
                  <option key={u.user_id} value={String(u.user_id)}>
                    {u.email} (user {u.user_id})
                  </option>
                ))}
              </select>
            </>
          ) : (
            <>
              <label for="usage-user">User id (empty: the whole group)</label>
              <input
                id="usage-user"
                inputMode="numeric"
                value={userId}
                aria-invalid={!userOk}
                aria-describedby={userOk ? undefined : 'usage-user-error'}
                onInput={(e) => setUserId(e.currentTarget.value.trim())}
              />
              {!userOk && (
                <span id="usage-user-error" class="error">
                  A user id is a whole number from 1.
                </span>
              )}
            </>
          )}
        </div>
        <div class="field">
          <button type="submit" class="secondary">
            Refresh
          </button>
        </div>
        <p class="muted">Counts arrive within seconds; the page reads them again every 10 s. Buckets are in UTC.</p>
      </form>
      <div class="usage-grid">
        {METRICS.map((m) => (
          <MetricPanel key={m.name} metric={m} series={data[m.name]} />
        ))}
      </div>
    </>
  );
}
