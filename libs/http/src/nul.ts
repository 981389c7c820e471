import type { RequestHandler } from 'express';
import { validationFailed } from '@dam/errors';

/**
 * PostgreSQL cannot store U+0000 in text, and no name, email or value of the contract needs it: a NUL anywhere
 * a client can put a string answers 400 here, once, instead of a 500 from the database (or a 503 at upload).
 */
export const hasNul = (value: string): boolean => value.includes('\u0000');

/** Throws 400 VALIDATION_FAILED naming `field` when `value` holds a NUL (for multipart names and fields). */
export function rejectNul(value: string, field: string): void {
  if (hasNul(value)) throw validationFailed([{ path: field, message: 'must not contain a NUL character' }]);
}

/** The path of the first string (or key) holding a NUL inside a parsed JSON value, or undefined. */
export function findNul(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return hasNul(value) ? path || '(body)' : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], path ? `${path}.${i}` : String(i));
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const at = path ? `${path}.${k}` : k;
      if (hasNul(k)) return at;
      const found = findNul(v, at);
      if (found) return found;
    }
  }
  return undefined;
}

/** `%00` (or a raw NUL) in the path or query of the request target. */
const NUL_IN_TARGET = /%00|\u0000/i;

/** Rejects a NUL in the request target (path parameters, query) before any route runs. */
export const rejectNulInTarget: RequestHandler = (req, _res, next) => {
  const url = req.originalUrl;
  if (NUL_IN_TARGET.test(url)) {
    const q = url.indexOf('?');
    const where = q >= 0 && NUL_IN_TARGET.test(url.slice(q)) ? 'query' : 'path';
    next(validationFailed([{ path: where, message: 'must not contain a NUL character' }]));
    return;
  }
  next();
};

/** Rejects a NUL in any string or key of a parsed JSON body; runs after the JSON parser. */
export const rejectNulInBody: RequestHandler = (req, _res, next) => {
  const at = req.body === undefined ? undefined : findNul(req.body);
  if (at) {
    next(validationFailed([{ path: at, message: 'must not contain a NUL character' }]));
    return;
  }
  next();
};
