// Imported first by main.ts: tracing must start before http/express load, or they are not instrumented.
import { startTelemetry } from '@dam/telemetry';

export const telemetry = startTelemetry('upload');
