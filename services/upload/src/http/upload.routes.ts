import { Router, type Request, type RequestHandler, type Response } from 'express';
import { PERMISSION, callerKey, principalOf, requireAny, type Principal } from '@dam/auth-tokens';
import { notFound } from '@dam/errors';
import { idempotent, memoryIdempotencyStore, parsed, validate, type IdempotencyStore } from '@dam/http';
import { z } from 'zod';
import { uploadTooLarge } from '../domain/upload.errors';
import { replaceAsset } from '../use-cases/replace-asset.use-case';
import { requestIngest, type RequestIngestDeps } from '../use-cases/request-ingest.use-case';
import { uploadAssets, type UploadDeps, type UploadResult } from '../use-cases/upload-assets.use-case';
import { closeAfterAnswer, principalSlots, type PrincipalSlots } from './body-limits';
import { outcomeOf, startUploadTimer } from './upload.metrics';

/**
 * Endpoint 2: POST {upload}/api/v1/assets/new/content/original/upload (multipart), and endpoint 4:
 * POST {upload}/api/v1/assets/{asset_id}/content/original/replace. Both share the edge limits: uploads at once
 * per caller, the declared size, the idle timeout.
 */
export function uploadRoutes(
  deps: UploadDeps & { maxConcurrentPerPrincipal?: number; idempotency?: IdempotencyStore; slots?: PrincipalSlots },
  authenticate: RequestHandler,
  /** Upload Asset also takes a user's upload key (CONTRACT §12); Replace does not. */
  authenticateUploads: RequestHandler = authenticate,
): Router {
  const router = Router();
  const slots = deps.slots ?? principalSlots(deps.maxConcurrentPerPrincipal ?? 0);

  const idempotency = deps.idempotency ?? memoryIdempotencyStore();
  // A repeat's body is read only to compare it: within the same bounds as an upload's.
  const repeatBody = { idleTimeoutMs: deps.idleTimeoutMs ?? 0, maxBytes: deps.maxUploadBytes, tooLarge: uploadTooLarge };
  const receive =
    (permissions: readonly string[], run: (req: Request, principal: Principal) => Promise<UploadResult>): RequestHandler =>
    async (req, res) => {
      const principal = principalOf(res);
      requireAny(principal, permissions);
      // Every body read counts against the caller's uploads at once, a repeat's as well.
      slots.enter(principal, req, res);
      // Idempotency-Key (CONTRACT §13): a repeat gets the first answer; one while the first runs is not read at all.
      await idempotent(idempotency, `${principal.group_id}:${callerKey(principal)}`, req, res, () => store(req, res, principal, run), {
        answeredEarly: closeAfterAnswer,
        repeatBody,
      });
    };
  const store = async (
    req: Request,
    res: Response,
    principal: Principal,
    run: (req: Request, principal: Principal) => Promise<UploadResult>,
  ): Promise<void> => {
    const done = startUploadTimer();
    const declared = Number(req.header('content-length'));
    if (Number.isFinite(declared) && declared > deps.maxUploadBytes) {
      // Refuse before reading anything; closing the connection spares the client sending the rest.
      closeAfterAnswer(req, res);
      done('rejected');
      throw uploadTooLarge(deps.maxUploadBytes);
    }
    try {
      const result = await run(req, principal);
      done('ok', result);
      res.status(200).json(result);
    } catch (error) {
      done(outcomeOf(error));
      // The body may be half read: do not keep the connection for another request.
      if (!req.complete) closeAfterAnswer(req, res);
      throw error;
    }
  };

  router.post(
    '/api/v1/assets/new/content/original/upload',
    authenticateUploads,
    receive([PERMISSION.CREATE_ASSET], (req, p) => uploadAssets(deps, p, req)),
  );
  router.post(
    '/api/v1/assets/:id/content/original/replace',
    authenticate,
    receive([PERMISSION.EDIT_ASSET, PERMISSION.EDIT_OWN_ASSET], (req, p) => {
      const id = String(req.params.id);
      // Not an asset id at all: no asset of that name can exist (the same 404 as an unknown one).
      if (!/^[A-Za-z0-9]{32}$/.test(id)) throw notFound('ASSET_NOT_FOUND', 'The asset does not exist');
      return replaceAsset(deps, p, id, req);
    }),
  );
  return router;
}

/** Ingest from URI's body (exported for the OpenAPI agreement test). */
export const ingestSchemas = { body: z.object({ name: z.string().trim().min(1).max(1024), key: z.string().trim().min(1).max(8192) }) };

/**
 * Endpoint 3, Ingest from URI: 202 `{id, status: "QUEUED", message}` at once (the download runs as a job), or
 * 200 with `status: "ERROR"` for a source that can never be read (refused scheme, address or bucket); the asset
 * then shows why in `errors.original`.
 */
export function ingestRoutes(deps: RequestIngestDeps & { idempotency?: IdempotencyStore }, authenticate: RequestHandler): Router {
  const router = Router();
  const idempotency = deps.idempotency ?? memoryIdempotencyStore();
  router.post('/api/v1/assets/new/content/original/external', authenticate, validate(ingestSchemas), async (req, res) => {
    const principal = principalOf(res);
    requireAny(principal, [PERMISSION.CREATE_ASSET]);
    const { body } = parsed(ingestSchemas, req, res);
    await idempotent(idempotency, `${principal.group_id}:${callerKey(principal)}`, req, res, async () => {
      const accepted = await requestIngest(deps, principal, body);
      res.status(accepted.status === 'QUEUED' ? 202 : 200).json(accepted);
    });
  });
  return router;
}
