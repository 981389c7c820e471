import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { validationFailed, type ErrorDetail } from '@dam/errors';

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

export function zodDetails(error: z.ZodError, prefix: string): ErrorDetail[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
    message: issue.message,
  }));
}

/**
 * Validates params, query and body together so one 400 lists every problem.
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
      if (result.success) out[part] = result.data;
      else details.push(...zodDetails(result.error, part === 'body' ? '' : part));
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
