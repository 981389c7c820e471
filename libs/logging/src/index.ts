import { AsyncLocalStorage } from 'node:async_hooks';
import { trace } from '@opentelemetry/api';
import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';
export { redactUrl, REDACTED } from './redact';

interface RequestContext {
  requestId: string;
}

const requestContext = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with a request id that every log line written inside it carries. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return requestContext.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

/** Fields that tie a log line to its request and trace; computed per line so async work keeps its own. */
function correlation(): Record<string, string> {
  const out: Record<string, string> = {};
  const requestId = currentRequestId();
  if (requestId) out.request_id = requestId;
  const span = trace.getActiveSpan();
  if (span) {
    const ctx = span.spanContext();
    out.trace_id = ctx.traceId;
    out.span_id = ctx.spanId;
  }
  return out;
}

export function createLogger(opts: { service: string; level?: string; destination?: pino.DestinationStream }): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { service: opts.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
    mixin: correlation,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-service-api-key"]',
        'req.headers["x-upload-key"]',
        'req.headers["x-dam-service-token"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.jwt',
        '*.uploadkey',
        '*.api_key',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
