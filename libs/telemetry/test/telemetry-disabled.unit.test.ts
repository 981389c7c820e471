import { trace } from '@opentelemetry/api';
import { currentTraceIds, startTelemetry } from '../src';

describe('telemetry with OTEL_SDK_DISABLED=true', () => {
  it('registers nothing: spans carry no ids', async () => {
    const telemetry = startTelemetry('disabled-test', { OTEL_SDK_DISABLED: 'true' });
    trace.getTracer('test').startActiveSpan('work', (span) => {
      expect(trace.isSpanContextValid(span.spanContext())).toBe(false);
      expect(currentTraceIds()).toEqual({});
      span.end();
    });
    await expect(telemetry.shutdown()).resolves.toBeUndefined();
  });
});
