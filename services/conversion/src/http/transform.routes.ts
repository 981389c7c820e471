import { Router } from 'express';
import { AppError, badRequest } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import { transformRequest } from '@dam/internal-api';
import { TransformsBusyError, UnprocessableImageError } from '../domain/conversion.errors';
import type { transformer } from '../use-cases/transform.use-case';

/** `POST /internal/v1/transforms` (metadata only): makes one on-demand transform into its cache key. */
export function transformRoutes(transform: ReturnType<typeof transformer>): Router {
  const router = Router();
  const schemas = { body: transformRequest };
  router.post('/internal/v1/transforms', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    // Metadata gave up (its timeout) or its client went: a transform still waiting for a slot leaves the queue.
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the caller went away'));
    });
    try {
      res.json(await transform(body.source_key, body.cache_key, body.params, gone.signal));
    } catch (error) {
      if (gone.signal.aborted) return;
      // The source is not an image sharp can read, or the result would be too large: the client's request fails.
      if (error instanceof UnprocessableImageError) throw badRequest('TRANSFORM_FAILED', error.message);
      // Metadata passes this answer and its Retry-After on to the client as they are.
      if (error instanceof TransformsBusyError) {
        throw new AppError('UNAVAILABLE', 'TRANSFORMS_BUSY', 'Too many on-demand transforms are being made: retry after the given time', undefined, {
          'Retry-After': String(error.retryAfterSeconds),
        });
      }
      throw error;
    }
  });
  return router;
}
