import { Router, type RequestHandler } from 'express';
import { PERMISSION, principalOf, requireAny } from '@dam/auth-tokens';
import { uploadAssets, type UploadDeps } from '../domain/upload-assets.use-case';
import { uploadTooLarge } from '../domain/upload.errors';
import { outcomeOf, startUploadTimer } from './upload.metrics';

/** Endpoint 2: POST {upload}/api/v1/assets/new/content/original/upload (multipart). */
export function uploadRoutes(deps: UploadDeps, authenticate: RequestHandler): Router {
  const router = Router();
  router.post('/api/v1/assets/new/content/original/upload', authenticate, async (req, res) => {
    requireAny(principalOf(res), [PERMISSION.CREATE_ASSET]);
    const done = startUploadTimer();
    const declared = Number(req.header('content-length'));
    if (Number.isFinite(declared) && declared > deps.maxUploadBytes) {
      // Refuse before reading anything; closing the connection spares the client sending the rest.
      res.setHeader('Connection', 'close');
      done('rejected');
      throw uploadTooLarge(deps.maxUploadBytes);
    }
    try {
      const result = await uploadAssets(deps, principalOf(res), req);
      done('ok', result);
      res.status(200).json(result);
    } catch (error) {
      done(outcomeOf(error));
      // The body may be half read: do not keep the connection for another request.
      if (!req.complete) res.setHeader('Connection', 'close');
      throw error;
    }
  });
  return router;
}
