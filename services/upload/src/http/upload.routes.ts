import { Router, type RequestHandler } from 'express';
import { PERMISSION, callerKey, principalOf, requireAny } from '@dam/auth-tokens';
import { uploadAssets, type UploadDeps } from '../domain/upload-assets.use-case';
import { tooManyUploads, uploadTooLarge } from '../domain/upload.errors';
import { outcomeOf, startUploadTimer } from './upload.metrics';

/** Endpoint 2: POST {upload}/api/v1/assets/new/content/original/upload (multipart). */
export function uploadRoutes(deps: UploadDeps & { maxConcurrentPerPrincipal?: number }, authenticate: RequestHandler): Router {
  const router = Router();
  const running = new Map<string, number>();
  const maxConcurrent = deps.maxConcurrentPerPrincipal ?? 0;
  router.post('/api/v1/assets/new/content/original/upload', authenticate, async (req, res) => {
    const principal = principalOf(res);
    requireAny(principal, [PERMISSION.CREATE_ASSET]);
    const who = callerKey(principal);
    const mine = running.get(who) ?? 0;
    if (maxConcurrent > 0 && mine >= maxConcurrent) {
      res.setHeader('Connection', 'close'); // the body is not read: spare the client sending it
      throw tooManyUploads(maxConcurrent);
    }
    running.set(who, mine + 1);
    res.once('close', () => {
      const left = (running.get(who) ?? 1) - 1;
      if (left > 0) running.set(who, left);
      else running.delete(who);
    });
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
