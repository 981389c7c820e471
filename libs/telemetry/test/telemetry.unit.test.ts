import { context, trace } from '@opentelemetry/api';
import { currentTraceHeaders, currentTraceIds, recordCarrier, startTelemetry, withExtractedContext, type Telemetry } from '../src';

describe('telemetry', () => {
  let telemetry: Telemetry;
  beforeAll(() => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    telemetry = startTelemetry('telemetry-test');
  });
  afterAll(async () => telemetry.shutdown());

  it('gives no trace ids outside a span', () => {
    expect(currentTraceIds()).toEqual({});
    expect(currentTraceHeaders()).toEqual({});
  });

  it('makes the active span ids visible', () => {
    const tracer = trace.getTracer('test');
    tracer.startActiveSpan('work', (span) => {
      const ids = currentTraceIds();
      expect(ids).toEqual({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
      expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanContext().traceId).not.toBe('0'.repeat(32));
      span.end();
    });
  });

  it('round-trips a traceparent through a header carrier', () => {
    const tracer = trace.getTracer('test');
    const { headers, traceId } = tracer.startActiveSpan('send', (span) => {
      const result = { headers: currentTraceHeaders(), traceId: span.spanContext().traceId };
      span.end();
      return result;
    });
    // Not sampled without an exporter: the ids travel, nothing is recorded.
    expect(headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));

    // On the receiving side, a child span started in the extracted context belongs to the same trace.
    const childTrace = withExtractedContext(recordCarrier({ ...headers }), () => {
      const child = tracer.startSpan('receive', undefined, context.active());
      child.end();
      return child.spanContext().traceId;
    });
    expect(childTrace).toBe(traceId);
  });
});
