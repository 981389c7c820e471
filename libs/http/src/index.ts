export { createHttpApp, finishApp, type CheckState, type HttpAppOptions, type ReadinessCheck } from './app';
export { isLoopbackAddress, routeLabel, setMetricsRoute } from './http-metrics';
export { errorMiddleware, mapError, notFoundRoute, statusOf, type ErrorBody, type MappedError } from './errors';
export { isDependencyUnavailable } from '@dam/errors';
export { parsed, pathId, validate, zodDetails } from './validate';
export { answerParserErrors, serve, type ServeOptions, type Served } from './serve';
export { parseRange, rangeUnlessChanged, type ByteRange, type RangeResult } from './range';
export { sendFileBytes } from './file-body';
export { runMain } from './run-main';
export { collectGarbageInFewFullPauses } from './gc';
export { hasNul, jsonProblem, MAX_JSON_DEPTH, rejectNul, type JsonProblem } from './nul';
export { parseTrustProxy, type TrustProxy } from './trust-proxy';
export { ACTIVE_CONTENT_CSP, contentDisposition, isActiveContentType, safeDisposition } from './content-safety';
export {
  createEdgeLimits,
  dnsReplicaCount,
  edgeLimitsFromConfig,
  RateLimiter,
  replicaCountFromConfig,
  type Budget,
  type EdgeLimitOptions,
  type EdgeLimits,
  type RateLimitDecision,
  type ReplicaCount,
} from './rate-limit';
export { isForbiddenAddress, outboundUrlProblem, parseAllowHosts } from './outbound-address';
export { checkWorkers, runService, type Resource, type Running, type ServiceDefinition, type Worker } from './run-service';
export { startPoller, type Poller, type PollerOptions } from './poller';
export {
  malformedUpload,
  notMultipart,
  receiveMultipart,
  uploadIdle,
  watchIdle,
  type FilePart,
  type Received,
  type ReceiveOptions,
} from './multipart/receiver';
export {
  guardedPost,
  HostRateLimiter,
  openGuardedDownload,
  OutboundError,
  outboundTargetProblem,
  type GuardedDownload,
  type GuardedDownloadOptions,
  type GuardedPostOptions,
} from './outbound-fetch';
export { ACCEL } from './accel';
export {
  fingerprintOf,
  IDEMPOTENCY_HEADER,
  idempotencySweeper,
  idempotent,
  memoryIdempotencyStore,
  type Claim,
  type IdempotencyStore,
  type KeptResponse,
} from './idempotency';
export { planContent, type ContentPlan, type StoredContent } from './content-response';
