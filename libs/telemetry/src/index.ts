// First: what is compiled after it keeps no dependency's source map (see source-maps.ts).
import './source-maps';
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
