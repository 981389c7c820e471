import { Router } from 'express';
import { z } from 'zod';
import { principalOf, type Principal } from '@dam/auth-tokens';
import { AppError, badRequest, notFound, validationFailed } from '@dam/errors';
import type { DeliveryTarget } from '@dam/internal-api';
import { contentDisposition, isActiveContentType, parsed, pathId, validate } from '@dam/http';
import type { Storage } from '@dam/storage';
import { deliveryError, type SuiteClients } from '../adapters/suite.clients';
import { accessSecret, cdnUrl, resolveExpiry, signLink, type LinkParams } from '../domain/link-signature';

export interface LinkDeps {
  clients: SuiteClients;
  storage: Storage;
  /** `{cdn}` as clients reach it. */
  cdnBase: string;
  /** The first signs (the others only verify at the edge). */
  signingKeys: readonly Buffer[];
  now?: () => number;
}

const options = {
  key: z.string().min(1).max(64).default('original'),
  link_type: z.enum(['cdn', 'object_storage']).default('cdn'),
  delivery: z.enum(['display', 'download']).default('download'),
  expiry: z.union([z.string(), z.number()]).default('3600').transform(String),
};
const assetNotFound = () => notFound('ASSET_NOT_FOUND', 'The asset does not exist');
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test); an id of no asset's form is an unknown asset (404). */
export const single = { params: z.object({ id: pathId(z.string().min(1).max(64), assetNotFound) }), query: z.object(options) };
export const bulk = { body: z.object({ ids: z.array(z.string().min(1).max(64)).min(1).max(100), ...options }) };

type Options = { key: string; link_type: 'cdn' | 'object_storage'; delivery: 'display' | 'download'; expiry: string };
type Made = { url: string; expires_at: string };

/** Conversions whose files a player or viewer reads one by one: only a `cdn` link (signed entries) serves them. */
const DESCRIPTOR = /\.(dzi|m3u8)$/;

/** Get Link (endpoint 16, CONTRACT §7 and §11): single and bulk. */
export function linkRoutes(deps: LinkDeps): Router {
  const router = Router();
  const nowSeconds = () => Math.floor((deps.now?.() ?? Date.now()) / 1000);
  const signingKey = deps.signingKeys[0] as Buffer;

  const expiryOf = (o: Options): number => {
    const r = resolveExpiry(o.expiry, o.link_type, nowSeconds());
    if (!r.ok) throw validationFailed([{ path: 'expiry', message: r.message }]);
    return r.expiry;
  };

  const make = async (target: DeliveryTarget, o: Options, expiry: number, accessId: () => Promise<string>): Promise<Made> => {
    const expires_at = new Date(expiry * 1000).toISOString();
    if (o.link_type === 'cdn') {
      const params: LinkParams = { key: o.key, expiry, delivery: o.delivery, accessId: await accessId() };
      const signature = signLink(accessSecret(signingKey, params.accessId), target.asset_id, params);
      // A Deep Zoom viewer finds the tiles next to the descriptor's own path, so its link names the file.
      const file = o.key === 'deepzoom' && target.folder ? target.object_key.slice(target.folder.length) : undefined;
      return { url: cdnUrl(deps.cdnBase, target.asset_id, params, signature, file), expires_at };
    }
    if (target.folder && DESCRIPTOR.test(target.object_key)) {
      throw badRequest('LINK_TYPE_NOT_APPLICABLE', `"${o.key}" is made of many files: only a cdn link serves it`);
    }
    const inline = o.delivery === 'display' && !isActiveContentType(target.content_type);
    // Signed for S3_PUBLIC_ENDPOINT, the address the client will send: the signature covers the host.
    const url = await deps.storage.presignPublicGet(target.object_key, expiry - nowSeconds(), {
      responseContentDisposition: contentDisposition(inline ? 'inline' : 'attachment', target.file_name),
      responseContentType: target.content_type,
    });
    return { url, expires_at };
  };

  /** The caller's accessID, asked of auth once per request and only when a cdn link needs it. */
  const accessIdFor = (principal: Principal) => {
    let id: Promise<string> | undefined;
    return () => (id ??= deps.clients.accessIdOf(principal));
  };

  router.get('/api/v1/assets/:id/get_link', validate(single), async (req, res) => {
    const { params, query } = parsed(single, req, res);
    const principal = principalOf(res);
    const expiry = expiryOf(query);
    const [item] = await deps.clients.delivery(principal, [params.id], query.key);
    if (!item) throw assetNotFound();
    if ('error' in item) throw deliveryError(item.error);
    const made = await make(item.target, query, expiry, accessIdFor(principal));
    res.json({ id: item.id, key: query.key, link_type: query.link_type, url: made.url, expires_at: made.expires_at });
  });

  router.post('/api/v1/assets/get_link', validate(bulk), async (req, res) => {
    const { body } = parsed(bulk, req, res);
    const principal = principalOf(res);
    const expiry = expiryOf(body);
    const items = await deps.clients.delivery(principal, body.ids, body.key);
    const accessId = accessIdFor(principal);
    const links = [];
    for (const item of items) {
      if ('error' in item) {
        links.push({ id: item.id, error: { code: item.error.code, message: item.error.message } });
        continue;
      }
      try {
        links.push({ id: item.id, ...(await make(item.target, body, expiry, accessId)) });
      } catch (error) {
        if (!(error instanceof AppError) || error.kind !== 'BAD_REQUEST') throw error;
        links.push({ id: item.id, error: { code: error.code, message: error.message } });
      }
    }
    res.json({ links });
  });

  return router;
}
