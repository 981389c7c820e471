import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { badRequest, notFound, payloadTooLarge } from '@dam/errors';
import { parsed, pathId, receiveMultipart, validate } from '@dam/http';
import type { Logger } from '@dam/logging';
import { conversionKey, storeOriginal, type Storage } from '@dam/storage';
import type { RunInTransaction } from '../domain/ports';
import { assetForNewConversion, checkConversionName, deleteCustomConversion, recordCustomConversion } from '../use-cases/custom-conversion.use-case';
import { assetIdParam } from './asset-data.routes';

export interface ConversionRouteDeps {
  transactions: RunInTransaction;
  storage: Storage;
  logger: Logger;
  maxBytes: number;
  idleTimeoutMs?: number;
}

/**
 * Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). The name is
 * checked by the use case (409 before 400, CONTRACT §11), not by the schema.
 */
export const conversionSchemas = { params: z.object({ id: assetIdParam, name: z.string().max(256) }) };
/** The same form; on Delete the name names an existing conversion, so one of no name's form is unknown (404, CONTRACT §16). */
export const conversionDeleteSchemas = {
  params: z.object({ id: assetIdParam, name: pathId(z.string().max(256), () => notFound('CONVERSION_NOT_FOUND', 'The asset has no conversion of that name')) }),
};

/** Endpoints 13 and 14: Add Conversion (multipart, one file in `file`) and Delete Conversion. */
export function conversionRoutes(deps: ConversionRouteDeps): Router {
  const router = Router();

  router.post('/api/v1/assets/:id/content/:name', validate(conversionSchemas), async (req, res) => {
    const { params } = parsed(conversionSchemas, req, res);
    const caller = principalOf(res);
    checkConversionName(params.name);
    const asset = await assetForNewConversion(deps.transactions, caller, params.id);
    const declared = Number(req.header('content-length'));
    if (Number.isFinite(declared) && declared > deps.maxBytes) {
      res.setHeader('Connection', 'close');
      throw payloadTooLarge(`The conversion is larger than ${deps.maxBytes} bytes`, 'UPLOAD_TOO_LARGE');
    }
    const key = conversionKey(String(asset.groupId), asset.id, asset.checksum, params.name, '');
    let total = 0;
    let stored = false;
    try {
      const { results } = await receiveMultipart(req, {
        ...(deps.idleTimeoutMs ? { idleTimeoutMs: deps.idleTimeoutMs } : {}),
        onField: () => undefined,
        async onFile(part) {
          part.stream.on('error', () => undefined);
          if (part.field !== 'file' || stored) {
            part.stream.resume();
            throw badRequest('INVALID_CONVERSION_FILE', 'Send exactly one file, in the field "file"');
          }
          stored = true;
          return storeOriginal(deps.storage, key, part.stream, {
            take(bytes) {
              total += bytes;
              if (total > deps.maxBytes) throw payloadTooLarge(`The conversion is larger than ${deps.maxBytes} bytes`, 'UPLOAD_TOO_LARGE');
            },
          });
        },
      });
      const file = results[0];
      if (!file) throw badRequest('NO_FILE', 'The request has no file part "file"');
      const dimension = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : null);
      const added = await recordCustomConversion(deps.transactions, caller, asset.id, asset.checksum, params.name, {
        object_key: key,
        content_type: file.contentType,
        size: file.size,
        width: dimension(file.metadata.width),
        height: dimension(file.metadata.height),
        etag: file.checksum,
      });
      res.status(200).json(added);
    } catch (error) {
      if (!req.complete) res.setHeader('Connection', 'close');
      // Nothing of a failed request stays. A conversion of the same name made for this same original lives at
      // the same key, and a failed S3 write leaves it as it was: the object is removed only if no record names it.
      if (stored) await removeUnlessRecorded(deps, caller.group_id, asset.id, params.name, key);
      throw error;
    }
  });

  router.delete('/api/v1/assets/:id/content/:name', validate(conversionDeleteSchemas), async (req, res) => {
    const { params } = parsed(conversionDeleteSchemas, req, res);
    res.json(await deleteCustomConversion(deps.transactions, principalOf(res), params.id, params.name));
  });
  return router;
}

async function removeUnlessRecorded(deps: ConversionRouteDeps, groupId: number, assetId: string, name: string, key: string): Promise<void> {
  const recorded = await deps.transactions(async (tx) => (await tx.assets.findForUpdate(groupId, assetId))?.conversions[name]?.object_key === key);
  if (recorded) return;
  await deps.storage.remove(key).catch((error: unknown) => deps.logger.error({ err: error, object_key: key }, 'could not remove a failed conversion upload'));
}
