export { startTelemetry, type Telemetry } from './telemetry';
export {
  currentTraceHeaders,
  currentTraceIds,
  extractTraceContext,
  injectTraceContext,
  recordCarrier,
  withExtractedContext,
  type HeaderCarrier,
} from './propagation';
