import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import { createAssets } from '../domain/create-assets.use-case';
import type { RunInTransaction } from '../domain/ports';

const storedFile = z.object({
  id: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters'),
  name: z.string().min(1).max(1024),
  size: z.number().int().nonnegative(),
  checksum: z.string().regex(/^[a-f0-9]{32}$/, 'must be an MD5 hex digest'),
  content_type: z.string().min(1).max(255),
  object_key: z.string().min(1).max(1024),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

const createBody = z.object({
  files: z.array(storedFile).min(1).max(1000),
  // Validated by the use case, so its rules (reserved keys, size, schema) live in one place.
  custom_metadata: z.unknown().optional(),
});

/** Called by upload (principal header) once the originals are stored. */
export function internalAssetsRoutes(runInTransaction: RunInTransaction): Router {
  const router = Router();
  const schemas = { body: createBody };
  router.post('/internal/v1/assets', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    const assets = await createAssets(runInTransaction, principalOf(res), { files: body.files, customMetadata: body.custom_metadata });
    res.status(201).json({ assets });
  });
  return router;
}
