import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { AlwaysOffSampler, ParentBasedSampler, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export interface Telemetry {
  shutdown(): Promise<void>;
}

/**
 * Without an exporter the SDK would register no tracer provider at all, and spans would carry no ids; this
 * processor keeps the provider (ids, context, propagation) while sending spans nowhere.
 */
const discardSpans: SpanProcessor = {
  onStart: () => undefined,
  onEnd: () => undefined,
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

let started: Telemetry | undefined;

/**
 * Starts tracing for the process. Call it before anything imports `http`, `express` or `pg` (first import in
 * `main.ts`), otherwise those modules are not instrumented. Spans go to OTLP/HTTP only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set; `OTEL_SDK_DISABLED=true` turns everything off. Idempotent.
 */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): Telemetry {
  if (started) return started;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    started = { shutdown: async () => undefined };
    return started;
  }
  const exporting = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    textMapPropagator: new W3CTraceContextPropagator(),
    // Without an exporter nothing records spans (a recorded span costs the gateway a third of its requests per
    // second, measured): trace ids still cross every hop and reach the logs, marked not sampled.
    ...(exporting
      ? { traceExporter: new OTLPTraceExporter() }
      : { spanProcessors: [discardSpans], sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }) }),
    // Logs go to stdout through pino; the SDK would otherwise default to OTLP log and metric exporters.
    logRecordProcessors: [],
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    // HTTP carries the trace ids across services; express's layers and pg's queries only add spans of their own,
    // worth their cost only when spans are recorded (unrecorded, they cost the gateway ~5 % of its CPU per request:
    // a span and a context bind per middleware).
    instrumentations: [
      new HttpInstrumentation({
        // Probes would fill the traces with noise.
        ignoreIncomingRequestHook: (req) => req.url === '/healthz' || req.url === '/readyz',
      }),
      ...(exporting ? [new ExpressInstrumentation(), new PgInstrumentation()] : []),
    ],
  });
  sdk.start();
  let stopped: Promise<void> | undefined;
  started = {
    shutdown: () => {
      stopped ??= sdk.shutdown().catch(() => undefined);
      return stopped;
    },
  };
  return started;
}
