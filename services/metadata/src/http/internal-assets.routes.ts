import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import { ingestRequest, replaceOriginalRequest, storedFile } from '@dam/internal-api';
import { startIngest } from '../use-cases/ingest.use-case';
import { createAssets } from '../use-cases/create-assets.use-case';
import { checkReplaceable, replaceOriginal } from '../use-cases/replace-original.use-case';
import type { RunInTransaction } from '../domain/ports';
import type { AutoAddonsOf } from '../domain/processing';

const createBody = z.object({
  files: z.array(storedFile).min(1).max(1000),
  // Validated by the use case, so its rules (reserved keys, size, schema) live in one place.
  custom_metadata: z.unknown().optional(),
});

/** Called by upload (principal header) once the originals are stored; `autoAddonsOf`: the group's automatic addons. */
export function internalAssetsRoutes(runInTransaction: RunInTransaction, autoAddonsOf?: AutoAddonsOf): Router {
  const router = Router();
  const schemas = { body: createBody };
  router.post('/internal/v1/assets', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    const assets = await createAssets(runInTransaction, principalOf(res), { files: body.files, customMetadata: body.custom_metadata }, autoAddonsOf);
    res.status(201).json({ assets });
  });
  return router;
}

/** Ingest from URI, called by upload: the asset and its download job (or the asset in ERROR when refused). */
export function internalIngestRoutes(runInTransaction: RunInTransaction): Router {
  const router = Router();
  const schemas = { body: ingestRequest };
  router.post('/internal/v1/assets/ingest', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    res.status(201).json(await startIngest(runInTransaction, principalOf(res), body));
  });
  return router;
}

/** Replace Asset Content, called by upload: the check before the body is read, then the registration. */
export function internalReplaceRoutes(runInTransaction: RunInTransaction, replacedOriginalGraceMs?: number, autoAddonsOf?: AutoAddonsOf): Router {
  const router = Router();
  const check = { params: z.object({ id: storedFile.shape.id }) };
  router.get('/internal/v1/assets/:id/replaceable', validate(check), async (req, res) => {
    const { params } = parsed(check, req, res);
    await checkReplaceable(runInTransaction, principalOf(res), params.id);
    res.status(204).end();
  });
  const replace = { params: check.params, body: replaceOriginalRequest };
  router.post('/internal/v1/assets/:id/original', validate(replace), async (req, res) => {
    const { params, body } = parsed(replace, req, res);
    const { custom_metadata: customMetadata, ...file } = body;
    const asset = await replaceOriginal(runInTransaction, principalOf(res), params.id, file, customMetadata, replacedOriginalGraceMs, autoAddonsOf);
    res.status(200).json({ asset });
  });
  return router;
}
