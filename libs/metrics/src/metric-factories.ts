import { Counter, Gauge, Histogram, type Metric } from 'prom-client';
import { metricsRegistry } from './registry';

export interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  /** Upper bounds in seconds (or the metric's unit); defaults to DURATION_BUCKETS. */
  buckets?: number[];
}

/** Seconds, from 5 ms to 5 min: covers API calls as well as long uploads and image conversions. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * Returns the metric already registered under `name`, or registers a new one. Code that builds several apps
 * or consumers in one process (tests, two consumers in one service) then shares one series set instead of
 * failing with "already registered".
 */
function existingOr<M extends Metric<string>>(name: string, kind: new (...args: never[]) => M, create: () => M): M {
  const found = metricsRegistry().getSingleMetric(name);
  if (found === undefined) return create();
  if (!(found instanceof kind)) throw new Error(`metric ${name} is already registered with another type`);
  return found;
}

export function counter<L extends string = string>(opts: MetricOptions<L>): Counter<L> {
  return existingOr(
    opts.name,
    Counter<L>,
    () => new Counter<L>({ name: opts.name, help: opts.help, labelNames: opts.labelNames ?? [], registers: [metricsRegistry()] }),
  );
}

export function gauge<L extends string = string>(opts: MetricOptions<L> & { collect?: (this: Gauge<L>) => void }): Gauge<L> {
  return existingOr(
    opts.name,
    Gauge<L>,
    () =>
      new Gauge<L>({
        name: opts.name,
        help: opts.help,
        labelNames: opts.labelNames ?? [],
        registers: [metricsRegistry()],
        // Read at every scrape (a value kept elsewhere, such as a cache's size).
        ...(opts.collect ? { collect: opts.collect } : {}),
      }),
  );
}

export function histogram<L extends string = string>(opts: HistogramOptions<L>): Histogram<L> {
  return existingOr(
    opts.name,
    Histogram<L>,
    () =>
      new Histogram<L>({
        name: opts.name,
        help: opts.help,
        labelNames: opts.labelNames ?? [],
        buckets: opts.buckets ?? DURATION_BUCKETS,
        registers: [metricsRegistry()],
      }),
  );
}
