import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { validationFailed, type AppError, type ErrorDetail } from '@dam/errors';

interface Schemas {
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
}

type Out<S extends Schemas> = {
  params: S['params'] extends z.ZodType ? z.infer<S['params']> : undefined;
  query: S['query'] extends z.ZodType ? z.infer<S['query']> : undefined;
  body: S['body'] extends z.ZodType ? z.infer<S['body']> : undefined;
};

const KEY = 'validated';

const PATH_IDS = new WeakMap<z.ZodType, () => AppError>();

/**
 * Marks the schema of a path parameter that names a resource (an asset, collection, job, search result...): a value
 * it refuses answers `notFound()`, the resource's 404, not a 400 (CONTRACT §16: an unknown id of any form is
 * unknown). Returns the schema itself, so it still documents the form (OpenAPI agreement tests read it).
 */
export function pathId<T extends z.ZodType>(schema: T, notFound: () => AppError): T {
  PATH_IDS.set(schema, notFound);
  return schema;
}

/** The 404 of the first path id (in the schema's order) that `error` refuses, if any. */
function unknownPathId(schema: z.ZodType, error: z.ZodError): AppError | undefined {
  const shape = (schema as { shape?: Record<string, z.ZodType> }).shape;
  if (!shape) return undefined;
  const refused = new Set(error.issues.map((issue) => issue.path[0]));
  for (const [name, member] of Object.entries(shape)) {
    const notFound = PATH_IDS.get(member);
    if (notFound && refused.has(name)) return notFound();
  }
  return undefined;
}

/** A refused key of a record (zod's "Invalid key in record") says why, in the key schema's own words. */
const keyIssues = (issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string }[] =>
  issue.code === 'invalid_key' && issue.issues.length > 0 ? issue.issues.map((i) => ({ path: [...issue.path, ...i.path], message: i.message })) : [issue];

export function zodDetails(error: z.ZodError, prefix: string): ErrorDetail[] {
  return error.issues.flatMap(keyIssues).map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
    message: issue.message,
  }));
}

/**
 * Validates params, query and body together so one 400 lists every problem; a path id (`pathId`) that is refused
 * answers its 404 first, whatever else is wrong: nothing can be done to what does not exist.
 * Express 5 makes `req.query` read-only, so parsed values live on `res.locals` and are read with `parsed()`.
 */
export function validate<S extends Schemas>(schemas: S): RequestHandler {
  return (req, res, next) => {
    const details: ErrorDetail[] = [];
    const out: Record<string, unknown> = {};
    for (const part of ['params', 'query', 'body'] as const) {
      const schema = schemas[part];
      if (!schema) continue;
      const result = schema.safeParse(req[part] ?? (part === 'body' ? undefined : {}));
      if (result.success) {
        out[part] = result.data;
        continue;
      }
      const unknown = part === 'params' ? unknownPathId(schema, result.error) : undefined;
      if (unknown) {
        next(unknown);
        return;
      }
      details.push(...zodDetails(result.error, part === 'body' ? '' : part));
    }
    if (details.length > 0) {
      next(validationFailed(details));
      return;
    }
    res.locals[KEY] = out;
    next();
  };
}

/** The values `validate()` parsed for this request, typed by the same schemas. */
export function parsed<S extends Schemas>(_schemas: S, _req: Request, res: Response): Out<S> {
  return res.locals[KEY] as Out<S>;
}
