import { context, propagation, trace, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';

/**
 * The subset of a header map we need. NATS `MsgHdrs` fits it (its `get` answers "" for a missing key), and so
 * does a small wrapper over a plain object, so this module never depends on a transport.
 */
export interface HeaderCarrier {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  keys(): string[];
}

const setter: TextMapSetter<HeaderCarrier> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

const getter: TextMapGetter<HeaderCarrier> = {
  keys: (carrier) => carrier.keys(),
  // An empty string means "absent" for NATS headers; the propagator must see undefined then.
  get: (carrier, key) => carrier.get(key) || undefined,
};

/** Writes `traceparent` (and `tracestate`) of the active (or given) context into the headers. */
export function injectTraceContext(headers: HeaderCarrier, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, setter);
}

/** The context carried by the headers (the active one when they carry none). */
export function extractTraceContext(headers: HeaderCarrier | undefined): Context {
  if (!headers) return context.active();
  return propagation.extract(context.active(), headers, getter);
}

/** Runs `fn` inside the context carried by the headers, so its spans and log lines join the sender's trace. */
export function withExtractedContext<T>(headers: HeaderCarrier | undefined, fn: () => T): T {
  return context.with(extractTraceContext(headers), fn);
}

/** Plain-object carrier: used where headers are stored as JSON (the outbox). */
export function recordCarrier(record: Record<string, string>): HeaderCarrier {
  return {
    get: (key) => record[key],
    set: (key, value) => {
      record[key] = value;
    },
    keys: () => Object.keys(record),
  };
}

/** The trace headers of the active context as a plain object (empty when there is no active span). */
export function currentTraceHeaders(): Record<string, string> {
  const record: Record<string, string> = {};
  injectTraceContext(recordCarrier(record));
  return record;
}

/** Ids of the active span for log lines; `{}` when no span is active. */
export function currentTraceIds(): { trace_id: string; span_id: string } | Record<string, never> {
  const span = trace.getSpan(context.active());
  const spanContext = span?.spanContext();
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
