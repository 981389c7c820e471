import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import { assetNotFound, getLink, getLinks, type GetLinkDeps } from '../use-cases/get-link.use-case';

export type LinkDeps = GetLinkDeps;

const options = {
  key: z.string().min(1).max(64).default('original'),
  link_type: z.enum(['cdn', 'object_storage']).default('cdn'),
  delivery: z.enum(['display', 'download']).default('download'),
  expiry: z.union([z.string(), z.number()]).default('3600').transform(String),
};
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test); an id of no asset's form is an unknown asset (404). */
export const single = { params: z.object({ id: pathId(z.string().min(1).max(64), assetNotFound) }), query: z.object(options) };
export const bulk = { body: z.object({ ids: z.array(z.string().min(1).max(64)).min(1).max(100), ...options }) };

/** Get Link (endpoint 16, CONTRACT §7 and §11): single and bulk. */
export function linkRoutes(deps: LinkDeps): Router {
  const router = Router();

  router.get('/api/v1/assets/:id/get_link', validate(single), async (req, res) => {
    const { params, query } = parsed(single, req, res);
    const made = await getLink(deps, principalOf(res), params.id, query);
    res.json({ id: made.id, key: query.key, link_type: query.link_type, url: made.url, expires_at: made.expires_at });
  });

  router.post('/api/v1/assets/get_link', validate(bulk), async (req, res) => {
    const { body } = parsed(bulk, req, res);
    res.json({ links: await getLinks(deps, principalOf(res), body.ids, body) });
  });

  return router;
}
