/**
 * Domain errors: code throws a kind, never an HTTP status. The HTTP layer maps kinds to statuses
 * (libs/http), so the same error reads correctly from a consumer, a CLI or a route.
 */
export type ErrorKind =
  | 'BAD_REQUEST'
  | 'VALIDATION'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNPROCESSABLE'
  | 'PAYLOAD_TOO_LARGE'
  | 'TIMEOUT'
  | 'RANGE_NOT_SATISFIABLE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE';

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Extra response headers the edge should send (Retry-After, Content-Range). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

export const badRequest = (code: string, message: string, details?: unknown): AppError => new AppError('BAD_REQUEST', code, message, details);

export const validationFailed = (details: ErrorDetail[], message = 'The request is invalid'): AppError =>
  new AppError('VALIDATION', 'VALIDATION_FAILED', message, details);

export const unauthenticated = (message = 'Missing or invalid credentials', code = 'UNAUTHENTICATED'): AppError =>
  new AppError('UNAUTHENTICATED', code, message);

export const forbidden = (message = 'Insufficient permissions', code = 'FORBIDDEN'): AppError => new AppError('FORBIDDEN', code, message);

export const notFound = (code: string, message: string): AppError => new AppError('NOT_FOUND', code, message);

export const conflict = (code: string, message: string, details?: unknown): AppError => new AppError('CONFLICT', code, message, details);

/** Well-formed, but it contradicts what the server already holds (422): an idempotency key reused for another request. */
export const unprocessable = (code: string, message: string): AppError => new AppError('UNPROCESSABLE', code, message);

export const payloadTooLarge = (message: string, code = 'PAYLOAD_TOO_LARGE'): AppError => new AppError('PAYLOAD_TOO_LARGE', code, message);

/** The client stopped sending the request (408): the connection is closed after the answer. */
export const requestTimeout = (message: string, code = 'REQUEST_TIMEOUT'): AppError =>
  new AppError('TIMEOUT', code, message, undefined, { Connection: 'close' });

export const rangeNotSatisfiable = (size: number): AppError =>
  new AppError('RANGE_NOT_SATISFIABLE', 'RANGE_NOT_SATISFIABLE', 'The requested range cannot be satisfied', undefined, {
    'Content-Range': `bytes */${size}`,
  });

export const rateLimited = (retryAfterSeconds: number, message = 'Too many requests'): AppError =>
  new AppError('RATE_LIMITED', 'RATE_LIMITED', message, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });

export const unavailable = (message: string, code = 'UNAVAILABLE'): AppError => new AppError('UNAVAILABLE', code, message);

/** Socket errors of a dependency that cannot be reached (PostgreSQL, S3, another service), and @dam/events' NatsUnavailableError (code NATS_UNAVAILABLE): nothing the client did. */
const UNREACHABLE_CODES = new Set([
  'NATS_UNAVAILABLE',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ECONNABORTED',
]);
/** PostgreSQL's SQLSTATEs for a server that is gone, shutting down, starting or out of connections. */
const PG_UNAVAILABLE = /^(08...|57P0[1-3]|53300)$/;
/** node-postgres' own words for a lost or impossible connection. */
const PG_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|connection is closed/i;

/**
 * True for an error that says a dependency is down or unreachable (its cause chain and AggregateError members
 * included): answered 503, retryable, instead of a 500 for a bug.
 */
export function isDependencyUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (UNREACHABLE_CODES.has(e.code) || PG_UNAVAILABLE.test(e.code))) return true;
  if (typeof e.message === 'string' && PG_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => isDependencyUnavailable(x, depth + 1))) return true;
  return isDependencyUnavailable(e.cause, depth + 1);
}

/**
 * Whatever says "not now, a dependency is down": a dependency's own error (isDependencyUnavailable) or a service's
 * UNAVAILABLE answer (another service answered 503, or could not be reached). Work failing this way is worth doing
 * again shortly, unchanged.
 */
export function isUnavailable(err: unknown): boolean {
  return (isAppError(err) && err.kind === 'UNAVAILABLE') || isDependencyUnavailable(err);
}
