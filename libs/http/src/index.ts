export { createHttpApp, finishApp, type HttpAppOptions, type ReadinessCheck } from './app';
export { isLoopbackAddress, routeLabel, setMetricsRoute } from './http-metrics';
export { errorMiddleware, mapError, notFoundRoute, statusOf, type ErrorBody, type MappedError } from './errors';
export { parsed, validate, zodDetails } from './validate';
export { answerParserErrors, serve, type ServeOptions, type Served } from './serve';
export { parseRange, type ByteRange, type RangeResult } from './range';
export { runMain } from './run-main';
export { findNul, hasNul, rejectNul } from './nul';
export { parseTrustProxy, type TrustProxy } from './trust-proxy';
