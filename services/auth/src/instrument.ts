import { startTelemetry } from '@dam/telemetry';

/** Imported first by main.ts so http, express and pg are instrumented when they load. */
export const telemetry = startTelemetry('auth');
