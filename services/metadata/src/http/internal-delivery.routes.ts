import { Router } from 'express';
import { principalOf } from '@dam/auth-tokens';
import { isAppError } from '@dam/errors';
import { deliveryRequest, type DeliveryResponse } from '@dam/internal-api';
import { parsed, validate } from '@dam/http';
import { storedObjectsOf } from '../domain/asset';
import type { AssetReader } from '../domain/ports';
import { resolveDownload } from '../use-cases/read-asset.use-case';
import { transformVariant, type TransformVariantDeps } from '../use-cases/transform-variant.use-case';

const STATUS = { NOT_FOUND: 404, BAD_REQUEST: 400, FORBIDDEN: 403 } as const;

/**
 * For link-signing (get_link and the edge), acting for the user a link is signed for: where each asset's bytes for
 * one key are, with the same checks and the same 404s as Download. One call for up to 100 ids (bulk get_link).
 * With a `transform` (the edge serving a signed link that carries one, CONTRACT §15), the target is the transformed
 * image, made once as Get Conversion makes it; conversion's 503 TRANSFORMS_BUSY (with Retry-After) answers the call.
 */
export function internalDeliveryRoutes(reader: AssetReader, variants: TransformVariantDeps): Router {
  const router = Router();
  const schemas = { body: deliveryRequest };
  router.post('/internal/v1/assets/delivery', validate(schemas), async (req, res) => {
    const { body } = parsed(schemas, req, res);
    const caller = principalOf(res);
    const items: DeliveryResponse['items'] = [];
    // Every asset by one statement (issue 35: 100 lookups one after another outlasted link-signing's timeout under
    // load); each id is then answered from them exactly as a lookup of its own would (the same checks and 404s).
    const found = new Map((await reader.findManyById(caller.group_id, body.ids)).map((a) => [a.id, a]));
    const loaded: Pick<AssetReader, 'findById'> = {
      findById: (groupId, id) => Promise.resolve(groupId === caller.group_id ? found.get(id) : undefined),
    };
    for (const id of body.ids) {
      try {
        const source = await resolveDownload(loaded, caller, id, body.key);
        const stored = body.key === 'original' ? undefined : storedObjectsOf({ object_key: source.objectKey });
        const folder = stored !== undefined && stored !== source.objectKey ? stored : undefined;
        const t = body.transform ? await transformVariant(variants, source, body.key, body.transform, folder) : source;
        items.push({
          id,
          target: {
            group_id: t.groupId,
            asset_id: t.assetId,
            object_key: t.objectKey,
            content_type: t.contentType,
            file_name: t.fileName,
            ...(t.size !== undefined ? { size: t.size } : {}),
            ...(t.etag !== undefined ? { etag: t.etag } : {}),
            ...(folder !== undefined ? { folder } : {}),
            ...(t !== source ? { source_object_key: source.objectKey } : {}),
          },
        });
      } catch (error) {
        if (!isAppError(error) || !(error.kind in STATUS)) throw error;
        items.push({ id, error: { status: STATUS[error.kind as keyof typeof STATUS], code: error.code, message: error.message } });
      }
    }
    res.json({ items } satisfies DeliveryResponse);
  });
  return router;
}
