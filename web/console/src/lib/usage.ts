/**
 * The Usage page's pure rules (CONTRACT §9, Get Usage): the five metrics and their units, the ranges and bucket
 * sizes offered, the buckets the API answers for a range (so gaps show as zero), and totals; how values and buckets are written
 * (the chart itself is uPlot's: components/usage-chart.tsx).
 */
export type MetricName = 'api_requests' | 'cdn_bytes' | 'transcode_seconds' | 'addon_runs' | 'storage_bytes';
export type Period = '1h' | '24h' | '7d';
export type Unit = 'count' | 'bytes' | 'seconds';

export interface Metric {
  name: MetricName;
  label: string;
  unit: Unit;
  /** A counter's total adds its buckets; a gauge's total is its latest value (storage, measured daily). */
  kind: 'counter' | 'gauge';
}

export const METRICS: readonly Metric[] = [
  { name: 'api_requests', label: 'API requests', unit: 'count', kind: 'counter' },
  { name: 'cdn_bytes', label: 'CDN bytes', unit: 'bytes', kind: 'counter' },
  { name: 'transcode_seconds', label: 'Transcode seconds', unit: 'seconds', kind: 'counter' },
  { name: 'addon_runs', label: 'Addon runs', unit: 'count', kind: 'counter' },
  { name: 'storage_bytes', label: 'Storage', unit: 'bytes', kind: 'gauge' },
];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const PERIOD_MS: Record<Period, number> = { '1h': HOUR, '24h': DAY, '7d': 7 * DAY };
export const PERIODS: readonly Period[] = ['1h', '24h', '7d'];

/** The ranges offered, ending now; the API refuses more than 364 days. */
export const RANGES = [
  { value: '24h', label: 'Last 24 hours', ms: DAY },
  { value: '7d', label: 'Last 7 days', ms: 7 * DAY },
  { value: '30d', label: 'Last 30 days', ms: 30 * DAY },
  { value: '90d', label: 'Last 90 days', ms: 90 * DAY },
  { value: '364d', label: 'Last 364 days', ms: 364 * DAY },
] as const;
export type RangeName = (typeof RANGES)[number]['value'];

/** More bars than this make a chart no one can read (1h over 364 days would be 8,736): such a bucket is not offered. */
export const MAX_BUCKETS = 800;

export function rangeOf(name: RangeName, now: number): { from: string; to: string } {
  const r = RANGES.find((x) => x.value === name) ?? RANGES[0];
  return { from: new Date(now - r.ms).toISOString(), to: new Date(now).toISOString() };
}

/** Where the API starts its buckets: `from` truncated to the hour (1h) or the day, UTC (24h, 7d). */
export function bucketOrigin(from: number, period: Period): number {
  return period === '1h' ? Math.floor(from / HOUR) * HOUR : Math.floor(from / DAY) * DAY;
}

/** The start of every bucket of [from, to] (ms), as the API counts them. */
export function bucketStarts(from: number, to: number, period: Period): number[] {
  const out: number[] = [];
  const step = PERIOD_MS[period];
  for (let t = bucketOrigin(from, period); t <= to && out.length <= MAX_BUCKETS * 2; t += step) out.push(t);
  return out;
}

export const bucketCount = (from: number, to: number, period: Period): number => bucketStarts(from, to, period).length;

/** The bucket sizes that give a readable chart over the range (the smallest first). */
export const periodsFor = (from: number, to: number): Period[] => PERIODS.filter((p) => bucketCount(from, to, p) <= MAX_BUCKETS);

/** The smallest readable bucket, unless the one asked for is readable too. */
export function periodFor(from: number, to: number, wanted: Period): Period {
  const ok = periodsFor(from, to);
  return ok.includes(wanted) ? wanted : (ok[0] ?? '7d');
}

export interface Point {
  start: string;
  value: number;
}

/** Every bucket of the range with its value, 0 where the series has none (the API may leave empty buckets out). */
export function fillSeries(series: readonly Point[], from: number, to: number, period: Period): { start: number; value: number }[] {
  const byStart = new Map<number, number>();
  for (const p of series) {
    const t = Date.parse(p.start);
    if (Number.isFinite(t)) byStart.set(t, (byStart.get(t) ?? 0) + p.value);
  }
  const starts = bucketStarts(from, to, period);
  // A bucket the API answered that this count does not know (another clock's truncation): keep it, in order.
  const known = new Set(starts);
  const extra = [...byStart.keys()].filter((t) => !known.has(t));
  return [...starts, ...extra].sort((a, b) => a - b).map((start) => ({ start, value: byStart.get(start) ?? 0 }));
}

/** A counter's total adds the buckets; a gauge's is its latest value (the API's `total` says the same). */
export function totalOf(series: readonly { value: number }[], kind: Metric['kind']): number {
  if (kind === 'gauge') return series.length ? (series[series.length - 1] as { value: number }).value : 0;
  return series.reduce((s, p) => s + p.value, 0);
}

const BYTE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** A value in its metric's unit, short: 1536 bytes → "1.5 KB", 5400 s → "1.5 h", 12345 → "12,345". */
export function formatMetric(value: number, unit: Unit): string {
  if (!Number.isFinite(value)) return '—';
  if (unit === 'bytes') {
    let v = value;
    let i = 0;
    while (Math.abs(v) >= 1024 && i < BYTE_UNITS.length - 1) {
      v /= 1024;
      i += 1;
    }
    return `${i === 0 || Math.abs(v) >= 10 ? Math.round(v) : v.toFixed(1)} ${BYTE_UNITS[i]}`;
  }
  if (unit === 'seconds') {
    if (value >= 3600) return `${(value / 3600).toFixed(value >= 36_000 ? 0 : 1)} h`;
    if (value >= 60) return `${(value / 60).toFixed(value >= 600 ? 0 : 1)} min`;
    return `${Math.round(value * 10) / 10} s`;
  }
  return Math.round(value).toLocaleString('en-US');
}

/** A bucket's start as its label: the hour for 1h buckets, the day otherwise (UTC, as the API counts). */
export function bucketLabel(start: number, period: Period): string {
  const iso = new Date(start).toISOString();
  return period === '1h' ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : iso.slice(0, 10);
}

/** The same, short, under the chart: "11-27 09:00" for hours, "2026-11-27" for days. */
export function axisLabel(start: number, period: Period): string {
  const iso = new Date(start).toISOString();
  return period === '1h' ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);
}
