import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, type ErrorKind, isAppError, isDependencyUnavailable } from '@dam/errors';
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
  // The router could not percent-decode a path parameter (`%FF`, a lone `%`): every path parameter of the API names
  // something (an id, a key, a page), and no name has that form, so it is unknown (404, CONTRACT §16), not a 400.
  if (err instanceof URIError && (err as { status?: number }).status === 400) {
    return new AppError('NOT_FOUND', 'NOT_FOUND', 'Nothing has this name: a path parameter is not valid percent-encoded UTF-8');
  }
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

/** Retry-After of a 503 whose cause gave none: a dependency coming back (a restart, a failover) takes seconds. */
const DEFAULT_RETRY_AFTER_S = '5';

/** Maps anything thrown to the contract's error body. Pure, so the mapping is unit-tested. */
export function mapError(err: unknown): MappedError {
  const known = isAppError(err)
    ? err
    : isDependencyUnavailable(err)
      ? new AppError('UNAVAILABLE', 'UNAVAILABLE', 'A service this request needs is unavailable: retry shortly')
      : fromFrameworkError((err ?? {}) as { type?: string; status?: number });
  if (known) {
    const body: ErrorBody = { error: { code: known.code, message: known.message } };
    if (known.details !== undefined) body.error.details = known.details;
    // Every 503 says when to try again (issue 35): a refusal's own Retry-After, else 5 s.
    const retryKnown = Object.keys(known.headers).some((h) => h.toLowerCase() === 'retry-after');
    const headers = known.kind === 'UNAVAILABLE' && !retryKnown ? { ...known.headers, 'Retry-After': DEFAULT_RETRY_AFTER_S } : known.headers;
    return { status: statusOf(known.kind), body, headers };
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
