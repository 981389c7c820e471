import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { axisLabel, bucketLabel, formatMetric, PERIOD_MS, type Period, type Unit } from '../lib/usage';

const HEIGHT = 190;
const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;
/** Where the x axis may put a label: whole buckets only (an hour's label on day buckets would say the same day twice). */
const X_INCRS: Record<Period, number[]> = {
  '1h': [1, 2, 3, 4, 6, 8, 12].map((h) => h * HOUR_S).concat([1, 2, 3, 7, 14, 28].map((d) => d * DAY_S)),
  '24h': [1, 2, 3, 7, 14, 28, 56, 91, 182].map((d) => d * DAY_S),
  '7d': [7, 14, 28, 56, 91, 182].map((d) => d * DAY_S),
};
/** Where the y axis may put a tick, in steps its unit reads well (formatMetric): no two ticks written the same. */
const decades = (ms: number[], base: number, powers: number) => Array.from({ length: powers }, (_, e) => ms.map((m) => m * base ** e)).flat();
const Y_INCRS: Record<Unit, number[]> = {
  count: decades([1, 2, 5], 10, 16),
  bytes: decades([1, 2, 5, 10, 20, 50, 100, 200, 500], 1024, 6),
  seconds: [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800].concat(
    decades([1, 2, 3, 6, 12, 24, 48], 3600, 1),
    decades([1, 2, 5], 10, 6).map((n) => n * 7 * 24 * 3600),
  ),
};

// uPlot is loaded with the Usage page's first chart (its own chunk, as OpenSeadragon and hls.js are), then kept.
let uplotModule: Promise<typeof uPlot> | undefined;
const loadUplot = () => (uplotModule ??= import('uplot').then((m) => m.default));

/** The console's colours (styles.css custom properties), read when a chart is drawn: a theme's change applies to the next. */
function themeColours(el: Element) {
  const css = getComputedStyle(el);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    bar: v('--accent', '#1d4ed8'),
    text: v('--muted', '#4a5263'),
    grid: v('--line', '#d5d9e0'),
    font: `11px ${css.fontFamily || 'system-ui, sans-serif'}`,
  };
}

function chartOptions(
  U: typeof uPlot,
  width: number,
  unit: Unit,
  period: Period,
  colours: ReturnType<typeof themeColours>,
  onHover: (idx: number | null) => void,
): uPlot.Options {
  const stepS = PERIOD_MS[period] / 1000;
  const axis = { stroke: colours.text, font: colours.font, grid: { stroke: colours.grid, width: 1 }, ticks: { stroke: colours.grid, width: 1 } };
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    // A vertical line where the pointer is, its bucket told under the chart; no zoom by dragging.
    cursor: { y: false, points: { show: false }, drag: { x: false, y: false, setScale: false } },
    // Buckets are counted in UTC by the API: the time axis is too.
    tzDate: (ts) => U.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales: {
      // Half a bucket either side, so the first and last bars are whole.
      x: { time: true, range: (_u, min, max) => [min - stepS / 2, max + stepS / 2] },
      y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
    },
    axes: [
      {
        ...axis,
        space: period === '1h' ? 90 : 80,
        size: 32,
        incrs: X_INCRS[period],
        values: (_u, splits) => splits.map((s) => axisLabel(s * 1000, period)),
      },
      {
        ...axis,
        space: 30,
        incrs: Y_INCRS[unit],
        values: (_u, splits) => splits.map((s) => formatMetric(s, unit)),
        // As wide as its longest label (about 6.5 px a character at 11 px), plus the tick.
        size: (_u, values) => 16 + Math.ceil(6.5 * Math.max(1, ...(values ?? []).map((s) => s.length))),
      },
    ],
    series: [
      {},
      {
        fill: colours.bar,
        stroke: colours.bar,
        width: 0,
        points: { show: false },
        paths: U.paths.bars?.({ size: [0.8, Infinity, 1], align: 0 }),
      },
    ],
    hooks: { setCursor: [(u) => onHover(u.cursor.idx ?? null)] },
  };
}

/**
 * One metric's buckets as bars, drawn by uPlot on a canvas at its panel's width (a ResizeObserver follows it),
 * redrawn with new counts. A canvas says nothing to assistive technology: its container is one image whose
 * label says the range and total, the values are in the table below it, and the bucket under the pointer is told in
 * text for the eye only.
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
  const host = useRef<HTMLDivElement>(null);
  const [hover, setHover] = useState<number | null>(null);
  const first = points[0];
  const last = points[points.length - 1];
  const summary =
    first && last
      ? `${label} from ${bucketLabel(first.start, period)} to ${bucketLabel(last.start, period)}: total ${formatMetric(total, unit)}`
      : `${label}: no data`;

  const chart = useRef<uPlot>();
  const data = (): uPlot.AlignedData => [points.map((p) => p.start / 1000), points.map((p) => p.value)];
  const latest = useRef(data);
  latest.current = data;

  // A chart per unit and bucket size (its axes depend on them), destroyed when they change or the panel goes.
  useEffect(() => {
    let alive = true;
    let observer: ResizeObserver | undefined;
    setHover(null);
    void loadUplot().then((U) => {
      const el = host.current;
      if (!alive || !el) return;
      const u = new U(chartOptions(U, Math.max(1, el.clientWidth), unit, period, themeColours(el), setHover), latest.current(), el);
      chart.current = u;
      observer = new ResizeObserver(() => {
        const width = Math.max(1, el.clientWidth);
        if (u.width !== width) u.setSize({ width, height: HEIGHT });
      });
      observer.observe(el);
    });
    return () => {
      alive = false;
      observer?.disconnect();
      chart.current?.destroy();
      chart.current = undefined;
    };
  }, [unit, period]);

  // New counts (the page reads them every 10 s) redraw the same chart.
  useEffect(() => {
    chart.current?.setData(data());
  }, [points]);

  const at = hover === null ? undefined : points[hover];
  return (
    <>
      <div ref={host} class="usage-chart" role="img" aria-label={summary} />
      <p class="usage-readout muted" aria-hidden="true">
        {at && `${bucketLabel(at.start, period)}: ${formatMetric(at.value, unit)}`}
      </p>
    </>
  );
}
