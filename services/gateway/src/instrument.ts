import { startTelemetry } from '@dam/telemetry';

/** Imported first by main.ts so http and express are instrumented (and traceparent injected) when they load. */
export const telemetry = startTelemetry('gateway');
