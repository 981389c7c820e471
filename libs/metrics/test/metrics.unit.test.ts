import { counter, gauge, histogram, metricsRegistry, metricsService, renderMetrics, sampleValue, setMetricsService } from '../src';

describe('@dam/metrics', () => {
  beforeAll(() => setMetricsService('unit-svc'));

  it('renders default process metrics and custom ones, all with the service label', async () => {
    const c = counter({ name: 'test_things_total', help: 'things', labelNames: ['kind'] });
    c.inc({ kind: 'a' });
    c.inc({ kind: 'a' }, 2);
    gauge({ name: 'test_queue_depth', help: 'depth' }).set(7);
    histogram({ name: 'test_work_seconds', help: 'work', labelNames: ['outcome'] }).observe({ outcome: 'ok' }, 0.2);

    const { contentType, body } = await renderMetrics();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(body).toMatch(/^process_cpu_user_seconds_total\{service="unit-svc"\} \d/m);
    expect(body).toMatch(/^nodejs_eventloop_lag_seconds\{service="unit-svc"\}/m);
    const svc = { service: 'unit-svc' };
    expect(sampleValue(body, 'test_things_total', { ...svc, kind: 'a' })).toBe(3);
    expect(sampleValue(body, 'test_queue_depth', svc)).toBe(7);
    expect(sampleValue(body, 'test_work_seconds_bucket', { ...svc, le: '0.1', outcome: 'ok' })).toBe(0);
    expect(sampleValue(body, 'test_work_seconds_bucket', { ...svc, le: '0.25', outcome: 'ok' })).toBe(1);
    expect(sampleValue(body, 'test_work_seconds_count', { ...svc, outcome: 'ok' })).toBe(1);
    expect(sampleValue(body, 'test_work_seconds_count', { ...svc, outcome: 'failed' })).toBeUndefined();
  });

  it('returns the registered metric when asked for the same name again', () => {
    const first = counter({ name: 'test_shared_total', help: 'shared' });
    const second = counter({ name: 'test_shared_total', help: 'shared' });
    expect(second).toBe(first);
    expect(metricsRegistry().getSingleMetric('test_shared_total')).toBe(first);
  });

  it('refuses a name already registered with another type', () => {
    counter({ name: 'test_typed_total', help: 'typed' });
    expect(() => gauge({ name: 'test_typed_total', help: 'typed' })).toThrow(/another type/);
  });

  it('keeps the first service name', () => {
    setMetricsService('other');
    expect(metricsService()).toBe('unit-svc');
  });
});
