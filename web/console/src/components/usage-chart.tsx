import { axisLabel, bucketLabel, formatMetric, niceScale, type Period, type Unit } from '../lib/usage';

const W = 420;
const H = 190;
const PAD = { left: 56, right: 6, top: 10, bottom: 24 };

/**
 * One metric's buckets as bars, drawn as plain SVG (attributes and classes only: nothing the console's CSP
 * `style-src 'self'` would block), scaled by its viewBox to the panel's width. The picture is one image for
 * assistive technology (its label says the range and total); the values are in the table below it.
 */
export function UsageChart({
  label,
  unit,
  period,
  points,
  total,
}: {
  label: string;
  unit: Unit;
  period: Period;
  points: { start: number; value: number }[];
  total: number;
}) {
  const max = points.reduce((m, p) => Math.max(m, p.value), 0);
  const { top, ticks } = niceScale(max);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, points.length);
  const barW = Math.max(0.5, slot * 0.8);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const first = points[0];
  const last = points[points.length - 1];
  const summary =
    first && last
      ? `${label} from ${bucketLabel(first.start, period)} to ${bucketLabel(last.start, period)}: total ${formatMetric(total, unit)}`
      : `${label}: no data`;
  return (
    <svg class="usage-chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} preserveAspectRatio="xMidYMid meet">
      {ticks.map((t) => (
        <g key={t} class="tick">
          <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} />
          <text x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
            {formatMetric(t, unit)}
          </text>
        </g>
      ))}
      {points.map((p, i) => (
        <rect
          key={p.start}
          class="bar"
          x={PAD.left + i * slot + (slot - barW) / 2}
          y={y(p.value)}
          width={barW}
          height={Math.max(0, PAD.top + plotH - y(p.value))}
          data-value={p.value}
        >
          <title>{`${bucketLabel(p.start, period)}: ${formatMetric(p.value, unit)}`}</title>
        </rect>
      ))}
      {first && (
        <text class="axis" x={PAD.left} y={H - 6} text-anchor="start">
          {axisLabel(first.start, period)}
        </text>
      )}
      {last && points.length > 1 && (
        <text class="axis" x={W - PAD.right} y={H - 6} text-anchor="end">
          {axisLabel(last.start, period)}
        </text>
      )}
    </svg>
  );
}
