export { metricsRegistry, metricsService, renderMetrics, setMetricsService } from './registry';
export { counter, gauge, histogram, DURATION_BUCKETS, type HistogramOptions, type MetricOptions } from './metric-factories';
export { metricsHandler } from './metrics-handler';
export type { Counter, Gauge, Histogram } from 'prom-client';
export { sampleValue } from './metric-text';
