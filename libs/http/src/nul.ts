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

/**
 * How deep a JSON value may nest. No document of the contract comes near it; a deeper one (a 12 KB `[[[…]]]` is
 * 6,000 levels) would overflow the stack of whatever walks it next (this check, JSON.stringify, a schema validator)
 * and answer 500.
 */
export const MAX_JSON_DEPTH = 100;

/** What is wrong with a parsed JSON value: the first string (or key) holding a NUL, or nesting past MAX_JSON_DEPTH. */
export interface JsonProblem {
  path: string;
  message: string;
}

/** Walks a parsed JSON value without recursion (any depth is safe to inspect) for a NUL or too deep a nesting. */
export function jsonProblem(value: unknown): JsonProblem | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop() as { value: unknown; path: string; depth: number };
    if (typeof v === 'string') {
      if (hasNul(v)) return { path: path || '(body)', message: 'must not contain a NUL character' };
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { path: path || '(body)', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` };
    const entries = Array.isArray(v) ? v.map((item, i) => [String(i), item] as const) : Object.entries(v as Record<string, unknown>);
    // Pushed in reverse, so the first problem in document order is found first.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, item] = entries[i] as readonly [string, unknown];
      const at = path ? `${path}.${k}` : k;
      if (!Array.isArray(v) && hasNul(k)) return { path: at, message: 'must not contain a NUL character' };
      stack.push({ value: item, path: at, depth: depth + 1 });
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

/** Rejects a NUL in any string or key of a parsed JSON body, or a body nested too deep; runs after the JSON parser. */
export const rejectNulInBody: RequestHandler = (req, _res, next) => {
  const problem = req.body === undefined ? undefined : jsonProblem(req.body);
  if (problem) {
    next(validationFailed([problem]));
    return;
  }
  next();
};
