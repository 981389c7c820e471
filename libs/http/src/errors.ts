import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, type ErrorKind, isAppError } from '@dam/errors';
import { redactUrl, type Logger } from '@dam/logging';

const STATUS: Record<ErrorKind, number> = {
  BAD_REQUEST: 400,
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  UNPROCESSABLE: 422,
  PAYLOAD_TOO_LARGE: 413,
  TIMEOUT: 408,
  RANGE_NOT_SATISFIABLE: 416,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
};

export const statusOf = (kind: ErrorKind): number => STATUS[kind];

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown; error_id?: string };
}

export interface MappedError {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
  /** Set for unexpected errors: the id the client sees and the log line carries. */
  errorId?: string;
}

/** Errors thrown by body parsers and other express middleware carry `type`/`status` rather than a kind. */
function fromFrameworkError(err: { type?: string; status?: number; message?: string }): AppError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new AppError('BAD_REQUEST', 'INVALID_JSON', 'The request body is not valid JSON');
    case 'entity.too.large':
      return new AppError('PAYLOAD_TOO_LARGE', 'PAYLOAD_TOO_LARGE', 'The request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('BAD_REQUEST', 'UNSUPPORTED_ENCODING', err.message ?? 'Unsupported body encoding');
    case 'request.aborted':
      return new AppError('BAD_REQUEST', 'REQUEST_ABORTED', 'The request was aborted');
    default:
      if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
        return new AppError('BAD_REQUEST', 'BAD_REQUEST', err.message ?? 'Bad request');
      }
      return undefined;
  }
}

/** Socket errors of a dependency that cannot be reached (PostgreSQL, S3, another service), and @dam/events' NatsUnavailableError: nothing the client did. */
const UNREACHABLE_CODES = new Set(['NATS_UNAVAILABLE', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED']);
/** PostgreSQL's SQLSTATEs for a server that is gone, shutting down, starting or out of connections. */
const PG_UNAVAILABLE = /^(08...|57P0[1-3]|53300)$/;
/** node-postgres' own words for a lost or impossible connection. */
const PG_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i;

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

/** Maps anything thrown to the contract's error body. Pure, so the mapping is unit-tested. */
export function mapError(err: unknown): MappedError {
  const known = isAppError(err)
    ? err
    : isDependencyUnavailable(err)
      ? new AppError('UNAVAILABLE', 'UNAVAILABLE', 'A service this request needs is unavailable: retry shortly', undefined, { 'Retry-After': '5' })
      : fromFrameworkError((err ?? {}) as { type?: string; status?: number });
  if (known) {
    const body: ErrorBody = { error: { code: known.code, message: known.message } };
    if (known.details !== undefined) body.error.details = known.details;
    return { status: statusOf(known.kind), body, headers: known.headers };
  }
  const errorId = randomUUID();
  return {
    status: 500,
    body: { error: { code: 'INTERNAL_ERROR', message: 'An unexpected error occurred', error_id: errorId } },
    headers: {},
    errorId,
  };
}

const REPRESENTATION_HEADERS = ['Content-Type', 'Content-Length', 'Content-Disposition', 'Content-Encoding', 'Content-Range', 'ETag', 'Last-Modified'];

export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const mapped = mapError(err);
    if (mapped.errorId) {
      logger.error({ err, error_id: mapped.errorId, method: req.method, url: redactUrl(req.originalUrl) }, 'unexpected error');
    } else if (!isAppError(err) && isDependencyUnavailable(err)) {
      logger.warn({ err, method: req.method, url: redactUrl(req.originalUrl) }, 'a dependency is unavailable: answered 503');
    }
    if (res.headersSent) {
      // Mid-stream failure: the status is gone, so cut the connection rather than send a truncated body as whole.
      res.destroy();
      return;
    }
    // A route may have described the representation it meant to send (a download's type, ETag, name) before
    // failing: none of that describes the error body.
    for (const header of REPRESENTATION_HEADERS) res.removeHeader(header);
    res.status(mapped.status).set(mapped.headers).json(mapped.body);
  };
}

export const notFoundRoute: RequestHandler = (req, _res, next) => {
  next(new AppError('NOT_FOUND', 'ROUTE_NOT_FOUND', `No route for ${req.method} ${req.path}`));
};
